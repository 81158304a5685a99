"""Trainers that build the model through a tower function, and :class:`SingleCostTrainer`,
tensorpack's base class for writing one."""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource
from tfloop.tfutils.common import get_global_step_var
from tfloop.tfutils.eager_capture import explain_eager_capture
from tfloop.tfutils.gradproc import FilterNoneGrad
from tfloop.tfutils.predict_tower import (
    build_predict_tower,
    lookup_tensors,
    make_input_placeholders,
)
from tfloop.tfutils.predictor import OnlinePredictor
from tfloop.tfutils.seed import warn_unseeded_eager_shuffles
from tfloop.tfutils.step_graph import colocate_gradients
from tfloop.tfutils.summary import add_cost_summary
from tfloop.tfutils.tower import (
    TowerContext,
    TowerFunc,
    TowerTensorHandles,
    get_current_tower_context,
)
from tfloop.train.base import Trainer
from tfloop.train.steps_per_run import (
    StepsPerRunLoop,
    check_steps_per_run,
)
from tfloop.utils import logger
from tfloop.utils.checks import is_int, is_number

__all__ = ["TowerTrainer", "SimpleTrainer", "NoOpTrainer", "SingleCostTrainer", "check_cost",
           "check_optimizer"]


def check_cost(cost):
    """Check that the tower function returned a scalar float tensor."""
    if not isinstance(cost, tf.Tensor):
        raise TypeError(f"build_graph must return the cost as a scalar tf.Tensor, got {cost!r}.")
    if cost.shape.rank is not None and cost.shape.rank != 0:
        raise ValueError(f"The cost must be a scalar, got {cost.name} with shape {cost.shape}: "
                         "reduce it, e.g. with tf.reduce_mean.")
    if not cost.dtype.is_floating:
        raise TypeError(f"The cost must be a float tensor, got {cost.name} of dtype "
                        f"{cost.dtype.name}.")
    return cost


def _keeping_main_cost(get_cost_fn, costs):
    """The tower function, appending the main training tower's cost to ``costs``: the trainer
    records it for the monitors once the training op exists (``add_cost_summary``)."""
    @functools.wraps(get_cost_fn)
    def build_and_keep(*inputs):
        cost = get_cost_fn(*inputs)
        ctx = get_current_tower_context()
        if (isinstance(cost, tf.Tensor) and cost.shape.rank == 0 and cost.dtype.is_floating
                and (ctx is None or ctx.is_main_training_tower)):
            costs.append(cost)
        return cost
    return build_and_keep


def check_optimizer(opt):
    if not isinstance(opt, tfv1.train.Optimizer):
        raise TypeError(
            "optimizer() must return a tf.compat.v1.train.Optimizer (e.g. "
            f"tf.compat.v1.train.AdamOptimizer(1e-3)), got {opt!r}. Keras optimizers do not work "
            "in tf.compat.v1 graphs.")
    for attr in ("_learning_rate", "_lr"):
        if not hasattr(opt, attr):
            continue
        lr = getattr(opt, attr)
        if not (is_number(lr) or isinstance(lr, (tf.Tensor, tf.Variable)) or callable(lr)):
            raise TypeError(
                f"optimizer(): {type(opt).__name__} got the learning rate {lr!r} "
                f"({type(lr).__name__}); give a number, a float tensor or a variable, e.g. "
                f"{type(opt).__name__}(0.1) or {type(opt).__name__}(tf.compat.v1.get_variable("
                "'learning_rate', initializer=0.1, trainable=False)).")
        break
    return opt


class TowerTrainer(Trainer):
    """A trainer whose model is a tower function; callbacks can find each tower's tensors.

    Attributes:
        tower_func (TowerFunc): the model's tower function; call it in a ``TowerContext`` to build
            another tower (e.g. an inference tower sharing the training variables).
        towers (TowerTensorHandles): every tower built so far.
        input_signature (list[tf.TensorSpec]): the model's inputs.
    """

    tower_func: TowerFunc | None = None

    @property
    def towers(self) -> TowerTensorHandles | None:
        return self.tower_func.towers if self.tower_func is not None else None

    @property
    def batches_per_step(self) -> int:
        """The batches one training step takes from the input: one per training tower."""
        return 1

    @property
    def input_signature(self) -> list[Any]:
        if self.tower_func is None:
            raise AttributeError(f"{type(self).__name__}.input_signature is set by setup_graph.")
        return self.tower_func.input_signature

    def setup_graph(self, input_signature: list[Any], input: InputSource,
                    get_cost_fn: Callable[..., Any], get_opt_fn: Callable[[], Any]) -> None:
        """Build the training graph: the input source, the tower(s), and the training op, with
        the run's :attr:`options` applied (the graph's seed, the float16 optimizer wrapper).

        Args:
            input_signature (list[tf.TensorSpec]): the model's inputs.
            input (InputSource): where the inputs come from.
            get_cost_fn (callable): the tower function: input tensors -> scalar cost.
            get_opt_fn (callable): returns a ``tf.compat.v1.train.Optimizer``.
        """
        if self.tower_func is not None:
            raise RuntimeError("setup_graph was already called on this trainer; build a new "
                               "trainer for another model.")
        if not isinstance(input, InputSource):
            raise TypeError("input must be an InputSource (DatasetInput, FeedInput, ...), got "
                            f"{input!r}.")
        seed = self.prepare_graph()
        get_opt_fn = self._recording(self.options.precision.optimizer_fn(get_opt_fn))
        with self.graph.as_default(), explain_eager_capture("The model (build_graph, optimizer())"):
            for cb in input.setup(input_signature, batches_per_step=self.batches_per_step):
                self.register_callback(cb)
            self._input_source = input
            main_costs: list[Any] = []
            self.tower_func = TowerFunc(_keeping_main_cost(get_cost_fn, main_costs),
                                        input.input_signature)
            self.train_op = self._setup_graph(input, get_cost_fn, get_opt_fn)
            if main_costs:
                add_cost_summary(main_costs[0], train_op=self.train_op)
        warn_unseeded_eager_shuffles(self.graph, seed)

    def setup_model(self, model: Any, input: InputSource) -> None:
        """:meth:`setup_graph` for a ``ModelDesc``: its inputs, ``build_graph`` and optimizer;
        it becomes :attr:`model`.

        Example:
            >>> trainer.setup_model(MyModel(), DatasetInput(make_dataset))
        """
        self._model = model
        self.setup_graph(model.get_input_signature(), input, model.build_graph, model.get_optimizer)

    def _recording(self, get_opt_fn):
        """``get_opt_fn``, keeping what it returns as :attr:`optimizer`."""
        def get_opt():
            self._optimizer = get_opt_fn()
            return self._optimizer
        return get_opt

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        """Build the towers and return the training op."""
        raise TypeError(f"{type(self).__name__} does not build a training graph.")

    def get_predictor(self, input_names: list, output_names: list,
                      device: int = 0) -> OnlinePredictor:
        """A predictor on the current weights: the tower function built for inference.

        During training, the first call for a device builds a predict tower
        (``tower-pred-<device>``) under ``TowerContext(is_training=False)``, sharing the training
        variables (no copy), so it must happen while the graph can change: in a callback's
        ``setup_graph``. The predictor runs in the training session once it exists (from
        ``before_train`` on).

        After training (``launch_train_with_config`` returned, e.g. in a notebook) it predicts
        with the weights training ended with (:attr:`final_weights`): the model is built for
        inference in a graph and session of its own, once per device, and tensors keep their
        training names. No checkpoint is needed.

        Args:
            input_names (list[str]): input names of the model (or any tensor of the tower).
            output_names (list[str]): tensor names inside the tower (without its prefix).
            device (int): GPU index for the tower (the CPU without that GPU); -1: the CPU.

        Returns:
            OnlinePredictor: ``predictor(*inputs) -> [outputs]``, thread-safe.

        Example:
            >>> class Sample(Callback):
            ...     def _setup_graph(self):
            ...         self.pred = self.trainer.get_predictor(["x"], ["prob"])
            ...     def _trigger(self):
            ...         prob, = self.pred(np.zeros([4, 3], np.float32))
            >>> launch_train_with_config(config, trainer)
            >>> prob, = trainer.get_predictor(["x"], ["prob"])(np.zeros([4, 3], np.float32))
        """
        if self.tower_func is None:
            raise RuntimeError("get_predictor needs the model's tower function: call it after "
                               "setup_graph (e.g. in a callback's setup_graph).")
        if not is_int(device):
            raise TypeError(f"get_predictor: device must be a GPU index or -1 (the CPU), got "
                            f"{device!r}.")
        if self.training_ended:
            return self.final.predictor(self.tower_func, input_names, output_names, device,
                                        self.options, self.default_session_config())
        tower_name = f"tower-pred-{device}" if device >= 0 else "tower-pred-cpu"
        try:
            tower = self.tower_func.towers[tower_name]
        except KeyError:
            if self.graph.finalized:
                raise RuntimeError(f"get_predictor(device={device}) builds a predict tower, which "
                                   "must happen before the graph is finalized: call it in a "
                                   "callback's setup_graph.") from None
            with self.graph.as_default():
                inputs = make_input_placeholders(self.input_signature, tower_name)
                tower = build_predict_tower(self.tower_func, inputs, tower_name, device,
                                            beside_training=True)
            logger.info(f"get_predictor: predict tower {tower_name!r} built.")
        return _TrainerPredictor(self, lookup_tensors(tower, list(input_names), "input_names"),
                                 lookup_tensors(tower, list(output_names), "output_names"))


def _call_once(get_opt_fn):
    made = []

    def get_optimizer():
        if not made:
            made.append(check_optimizer(get_opt_fn()))
        return made[0]
    return get_optimizer


class SingleCostTrainer(TowerTrainer):
    """Base class of trainers that minimize one cost from a tower function.

    Subclasses implement ``_setup_graph(input, get_cost_fn, get_opt_fn)``: build the towers
    (``_make_get_grad_fn`` gives each tower's gradients) and return the training op, or set
    ``self.train_op`` and return a list of callbacks to register (tensorpack's convention).
    ``get_opt_fn`` returns the same optimizer at every call.

    Attributes:
        COLOCATE_GRADIENTS_WITH_OPS, GATE_GRADIENTS, AGGREGATION_METHOD: the options of
            ``compute_gradients`` used by ``_make_get_grad_fn``. ``COLOCATE_GRADIENTS_WITH_OPS``
            is None by default: colocate when the model placed an op on a device
            (:func:`tfloop.tfutils.step_graph.colocate_gradients`); True or False forces it.

    Example:
        >>> class MyTrainer(SingleCostTrainer):
        ...     def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        ...         with TowerContext("", is_training=True):
        ...             grads = self._make_get_grad_fn(input, get_cost_fn, get_opt_fn)()
        ...         self.train_op = get_opt_fn().apply_gradients(
        ...             grads, global_step=get_global_step_var(), name="train_op")
        ...         return []
    """

    COLOCATE_GRADIENTS_WITH_OPS: bool | None = None
    GATE_GRADIENTS = False
    AGGREGATION_METHOD = tf.AggregationMethod.DEFAULT

    @property
    def train_op(self):
        return self._train_op

    @train_op.setter
    def train_op(self, value):
        # tensorpack's _setup_graph returns its callbacks (having set train_op itself).
        if isinstance(value, (list, tuple)):
            with self.graph.as_default():
                for cb in value:
                    self.register_callback(cb)
            return
        self._train_op = value

    def setup_graph(self, input_signature, input, get_cost_fn, get_opt_fn):
        super().setup_graph(input_signature, input, get_cost_fn, _call_once(get_opt_fn))
        if self._train_op is None:
            raise TypeError(f"{type(self).__name__}._setup_graph must return the training op or "
                            f"set self.train_op.")

    def _make_get_grad_fn(self, input, get_cost_fn, get_opt_fn):
        """A function to call inside a training ``TowerContext``: it reads the inputs, builds the
        cost with ``get_cost_fn`` and returns the ``(gradient, variable)`` pairs of the tower's
        trainable variables (None gradients dropped); in an inference tower it returns None."""
        def get_grad_fn():
            ctx = get_current_tower_context()
            if ctx is None:
                raise RuntimeError("The function of _make_get_grad_fn must be called inside a "
                                   "TowerContext.")
            cost = check_cost(get_cost_fn(*input.get_input_tensors()))
            if not ctx.is_training:
                return None
            variables = tfv1.trainable_variables()
            if ctx.vs_name:
                variables = [v for v in variables if v.op.name.startswith(ctx.vs_name + "/")]
            colocate = self.COLOCATE_GRADIENTS_WITH_OPS
            if colocate is None:
                colocate = colocate_gradients(cost, variables)
            grads = get_opt_fn().compute_gradients(
                cost, var_list=variables, gate_gradients=self.GATE_GRADIENTS,
                colocate_gradients_with_ops=colocate, aggregation_method=self.AGGREGATION_METHOD)
            return FilterNoneGrad().process(grads)
        return get_grad_fn


class _TrainerPredictor(OnlinePredictor):
    """An OnlinePredictor that runs in its trainer's session, once the trainer has one."""

    def __init__(self, trainer, input_tensors, output_tensors):
        self._trainer = trainer
        super().__init__(input_tensors, output_tensors, sess=trainer.sess)

    def _do_call(self, dp):
        if self._trainer.training_ended:
            raise RuntimeError("A predictor made by trainer.get_predictor during training runs "
                               "in the training session, which is closed now: call "
                               "trainer.get_predictor again for a predictor on the weights "
                               "training ended with.")
        return super()._do_call(dp)

    def _default_session(self):
        if self._trainer.sess is None:
            raise RuntimeError(f"{self._who} was made by trainer.get_predictor and runs in the "
                               "training session, which does not exist yet: call it from "
                               "before_train on.")
        return self._trainer.sess


class SimpleTrainer(TowerTrainer):
    """Train on one device: one tower, ``opt.minimize(cost)``.

    Args:
        steps_per_run (int): training steps per session call, run as an in-graph loop; see
            :mod:`tfloop.train.steps_per_run` for what callbacks see when it is > 1.

    Example:
        >>> launch_train_with_config(config, SimpleTrainer())
        >>> launch_train_with_config(config, SimpleTrainer(steps_per_run=10))
    """

    supports_steps_per_run = True

    def __init__(self, steps_per_run: int = 1) -> None:
        super().__init__()
        self.loop.steps_per_run = check_steps_per_run(steps_per_run)

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        multi = StepsPerRunLoop(self.loop.steps_per_run) if self.loop.steps_per_run > 1 else None
        with multi.last_step() if multi else contextlib.nullcontext():
            inputs = input.get_input_tensors()
            with TowerContext("", is_training=True):
                cost = check_cost(self.tower_func(*inputs))
            opt = check_optimizer(get_opt_fn())
            if not tfv1.trainable_variables():
                raise ValueError("The model has no trainable variables: the cost "
                                 f"{cost.name} does not depend on any trainable variable.")
            with tf.name_scope("optimizer"):
                grads = opt.compute_gradients(cost, colocate_gradients_with_ops=colocate_gradients(
                    cost, tfv1.trainable_variables()))
                grads = [(g, v) for g, v in grads if g is not None]
                if not grads:
                    raise ValueError(f"The cost {cost.name} does not depend on any trainable "
                                     "variable.")
            train_op = opt.apply_gradients(grads, global_step=get_global_step_var(),
                                           name="train_op")
        if multi:
            multi.build(train_op, input, inputs, get_cost_fn, opt, grads)
        return train_op


class NoOpTrainer(TowerTrainer):
    """A trainer whose step only advances the global step: it runs just the callbacks.

    Useful to run callbacks (e.g. inference or a schedule) on a model without training it.

    Example:
        >>> trainer = NoOpTrainer()
        >>> trainer.train_with_defaults(callbacks=[MyCallback()], steps_per_epoch=10, max_epoch=1)
    """

    def __init__(self) -> None:
        super().__init__()
        with self.graph.as_default():
            self.train_op = tfv1.assign_add(get_global_step_var(), 1, name="train_op").op

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        with TowerContext("", is_training=True):
            self.tower_func(*input.get_input_tensors())
        logger.info("NoOpTrainer: the model is built but not trained.")
        return self.train_op
