"""tensorpack's Keras bridge, for Keras 3: :class:`KerasModel` and :class:`KerasPhaseCallback`.

``KerasModel`` trains a Keras model built by a function of the model's inputs, with Keras-style
``compile``/``fit`` and tfloop's trainers underneath: ``fit`` runs ``Trainer.train_with_defaults``.
The model is built once, on ``keras.Input`` placeholders shaped like ``input_signature`` (Keras 3
builds models only on its own symbolic tensors), and then called inside every tower, where
:class:`tfloop.tfutils.keras_scope.KerasTowerScope` gives its layers graph variables shared by all
towers and the tower's training flag.
"""
import functools

import keras

from tfloop.callbacks.base import Callback
from tfloop.callbacks.inference import ScalarStats
from tfloop.callbacks.inference_loop import InferenceRunner
from tfloop.callbacks.steps import MaintainStepCounter
from tfloop.compat import tf, tfv1
from tfloop.tfutils.summary import add_moving_summary
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.train import SimpleTrainer, SyncMultiGPUTrainerParameterServer, TowerTrainer
from tfloop.train.config import as_input_source
from tfloop.train.options import RunOptions
from tfloop.utils import logger
from tfloop.utils.coerce import tensorpack_keywords
from tfloop.utils.gpu import get_num_gpu

__all__ = ["KerasModel", "KerasPhaseCallback", "setup_keras_trainer"]

TOTAL_LOSS_NAME = "total_cost"


class KerasPhaseCallback(Callback):
    """Check, when training starts, that towers of the phase ``isTrain`` exist to run the
    model's Keras layers in that phase.

    What Keras 3 changed: Keras 2 had one global ``learning_phase`` placeholder, which tensorpack
    fed at every step (1 in training, 0 in ``InferenceRunner``). Keras 3 has no such tensor: a
    layer takes ``training=`` at call time, and in tfloop a Keras layer called without it gets the
    training flag of the tower it is built in (:mod:`tfloop.tfutils.keras_scope`), fixed in the
    graph. Nothing is fed, so this callback checks what the feed used to provide:
    ``KerasPhaseCallback(True)`` that the trainer built at least one training tower (at
    ``setup_graph``; a trainer without towers fails), and ``KerasPhaseCallback(False)`` that at
    least one inference tower (an ``InferenceRunner``'s) was built (before training). It logs
    how many towers run the phase, and changes nothing in the graph or the step.

    Args:
        isTrain (bool): the phase: True for the trainer's towers, False for inference towers.

    Example:
        >>> config = TrainConfig(model=Model(), dataflow=train,
        ...                      callbacks=[KerasPhaseCallback(True), ModelSaver()])
    """

    def __init__(self, isTrain):
        if not isinstance(isTrain, bool):
            raise TypeError(f"KerasPhaseCallback(isTrain) takes True (training towers) or False "
                            f"(inference towers), got {isTrain!r}.")
        self._isTrain = isTrain

    def _setup_graph(self):
        towers = self.trainer.towers
        if towers is None:
            raise ValueError(f"KerasPhaseCallback({self._isTrain}) needs a trainer that builds "
                             f"towers (SimpleTrainer, a multi-GPU trainer), got "
                             f"{type(self.trainer).__name__} with none.")
        if self._isTrain:
            self._check(towers.training(), "the trainer")

    def _before_train(self):
        if not self._isTrain:  # inference runners build their towers in their setup_graph
            self._check([t for t in self.trainer.towers if not t.is_training],
                        "the inference runners")

    def _check(self, towers, who):
        towers = list(towers)
        if not towers:
            fix = ("train with a trainer that builds training towers (SimpleTrainer, a multi-GPU "
                   "trainer)" if self._isTrain else
                   "add an InferenceRunner, or drop KerasPhaseCallback(False)")
            raise ValueError(f"KerasPhaseCallback({self._isTrain}): {who} built no tower with "
                             f"is_training={self._isTrain}, so no Keras layer runs in that "
                             f"phase: {fix}.")
        logger.info(f"KerasPhaseCallback: Keras layers in {len(towers)} tower(s) of {who} take "
                    f"training={self._isTrain} from their tower.")


def _check_signature(signature, name):
    if signature is None:
        raise ValueError(f"KerasModel needs {name}: a list of tf.TensorSpec, e.g. "
                         f"[tf.TensorSpec([None, 28, 28, 1], tf.float32, 'images')].")
    signature = list(signature)
    bad = [s for s in signature if not isinstance(s, tf.TensorSpec)]
    if not signature or bad:
        raise TypeError(f"KerasModel: {name} must be a non-empty list of tf.TensorSpec, got "
                        f"{signature!r}.")
    return signature


def _as_names(value, what):
    names = [value] if isinstance(value, str) else list(value or [])
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"KerasModel.compile: {what} must be Keras {what} names (strings), got "
                        f"{bad[0]!r}.")
    return names


def _keras_function(kind, name):
    try:
        return getattr(keras, kind).get(name)
    except ValueError:
        raise ValueError(f"KerasModel.compile: {name!r} is not a Keras {kind[:-1]} name; use e.g. "
                         f"'categorical_crossentropy' or 'categorical_accuracy'.") from None


def _batch_metric(name):
    """The per-example function of the Keras metric ``name``.

    Keras 3 names give stateful ``Metric`` objects whose call adds to running totals (variables
    shared by every tower that calls it): the batch's value needs the function they average.
    """
    metric = _keras_function("metrics", name)
    if not isinstance(metric, keras.metrics.Metric):
        return metric
    fn = getattr(metric, "_fn", None)
    if not isinstance(metric, keras.metrics.MeanMetricWrapper) or not callable(fn):
        raise ValueError(f"KerasModel.compile: the Keras metric {name!r} "
                         f"({type(metric).__name__}) is not a mean of per-example values, so it "
                         "has no batch value; use one that is (e.g. 'categorical_accuracy', "
                         "'mse'), or compute it in a callback.")
    return functools.partial(fn, **getattr(metric, "_fn_kwargs", {}))


def _run_options(options, **given):
    """``options``, or the RunOptions of the options ``given`` (None when neither is)."""
    named = {k: v for k, v in given.items() if v is not None and v is not False}
    if options is not None and named:
        raise ValueError(f"KerasModel: give options= or {', '.join(f'{k}=' for k in named)}, "
                         f"not both (options={options!r}).")
    if options is not None and not isinstance(options, RunOptions):
        raise TypeError(f"KerasModel: options must be a RunOptions (e.g. RunOptions(seed=0)), "
                        f"got {options!r}.")
    return options if options is not None else (RunOptions(**given) if named else None)


class KerasModel:
    """Train a Keras model Keras-style (``compile``, ``fit``) with a tfloop trainer.

    ``get_model`` is called once, with one ``keras.Input`` per ``input_signature`` entry, and
    returns the ``keras.Model``; every tower then calls that model on its input tensors. The cost
    is the sum of the batch mean of each loss (one per model output and target, each named by the
    loss) and the model's own losses (regularizers), named ``total_cost``; each metric's batch
    mean is named by the metric and, like the losses, summarized as a moving average. A metric is
    the batch's own value in every tower (Keras 3's metric objects keep running totals; their
    per-example function is used instead), so validation gets the validation set's value.
    ``fit`` runs once per ``KerasModel``.

    Args:
        get_model (callable): ``(input1, input2, ...) -> keras.Model`` on Keras symbolic inputs.
        input_signature (list[tf.TensorSpec]): the model's inputs.
        target_signature (list[tf.TensorSpec]): the targets, one per model output.
        input (InputSource | DataFlow): the training data: datapoints of inputs then targets.
        trainer (Trainer): by default ``SimpleTrainer`` with at most one GPU, else
            ``SyncMultiGPUTrainerParameterServer`` over all GPUs.
        seed, deterministic, mixed_precision, xla: the run's options, as in
            :class:`~tfloop.train.options.RunOptions` (``options=`` gives them at once); the
            trainer applies them, as for ``TrainConfig``. None given: the trainer's own.

    Example:
        >>> M = KerasModel(lambda image: keras.Sequential([
        ...         keras.layers.InputLayer(input_tensor=image), keras.layers.Flatten(),
        ...         keras.layers.Dense(10, activation="softmax")]),
        ...     input_signature=[tf.TensorSpec([None, 28, 28], tf.float32, "images")],
        ...     target_signature=[tf.TensorSpec([None, 10], tf.float32, "labels")],
        ...     input=QueueInput(train_dataflow))
        >>> M.compile(tf.train.AdamOptimizer(1e-3), loss="categorical_crossentropy",
        ...           metrics="categorical_accuracy")
        >>> M.fit(validation_data=test_dataflow, steps_per_epoch=100, max_epoch=3)

        Seeded, in float16: ``KerasModel(get_model, ..., seed=0, mixed_precision="float16")``.
    """

    @tensorpack_keywords(inputs_desc="input_signature", targets_desc="target_signature")
    def __init__(self, get_model, input_signature=None, target_signature=None, input=None,
                 trainer=None, *, seed=None, deterministic=False, mixed_precision=None,
                 xla=False, options=None):
        if not callable(get_model):
            raise TypeError(f"KerasModel: get_model must be a function of the inputs returning a "
                            f"keras.Model, got {get_model!r}.")
        self.get_model = get_model
        self.input_signature = _check_signature(input_signature, "input_signature")
        self.target_signature = _check_signature(target_signature, "target_signature")
        if input is None:
            raise ValueError("KerasModel needs input=: the training InputSource or DataFlow.")
        if trainer is None:
            num_gpu = get_num_gpu()
            trainer = SimpleTrainer() if num_gpu <= 1 else \
                SyncMultiGPUTrainerParameterServer(num_gpu)
        if not isinstance(trainer, TowerTrainer):
            raise TypeError(f"KerasModel: trainer must be a tfloop Trainer that builds towers "
                            f"(SimpleTrainer, a multi-GPU trainer), got {trainer!r}.")
        self.input = as_input_source(input)
        self.trainer: TowerTrainer = trainer
        options = _run_options(options, seed=seed, deterministic=deterministic,
                               mixed_precision=mixed_precision, xla=xla)
        if options is not None:
            trainer.set_options(options)
        self.model = None
        self._stats_to_inference = None

    def compile(self, optimizer, loss, metrics=None):
        """Build the training graph.

        Args:
            optimizer (tf.compat.v1.train.Optimizer): trains the model's weights.
            loss (str | list[str]): Keras loss names, one per model output.
            metrics (str | list[str]): Keras metric names, the i-th on the i-th output.
        """
        if not isinstance(optimizer, tfv1.train.Optimizer):
            raise TypeError(f"KerasModel.compile: optimizer must be a "
                            f"tf.compat.v1.train.Optimizer (Keras optimizers do not work in "
                            f"tf.compat.v1 graphs), got {optimizer!r}.")
        losses, metrics = _as_names(loss, "losses"), _as_names(metrics, "metrics")
        if len(losses) != len(self.target_signature):
            raise ValueError(f"KerasModel.compile: {len(losses)} loss(es) {losses} for "
                             f"{len(self.target_signature)} target(s): give one loss per target.")
        if len(metrics) > len(self.target_signature):
            raise ValueError(f"KerasModel.compile: {len(metrics)} metrics {metrics} but only "
                             f"{len(self.target_signature)} output(s): one metric per output.")
        self._losses = [(name, _keras_function("losses", name)) for name in losses]
        self._metrics = [(name, _batch_metric(name)) for name in metrics]
        self._stats_to_inference = losses + metrics + [TOTAL_LOSS_NAME]
        self.trainer.setup_graph(self.input_signature + self.target_signature, self.input,
                                 self._build_cost, lambda: optimizer)

    def _keras_model(self):
        if self.model is None:
            inputs = [keras.Input(batch_shape=tuple(s.shape), dtype=s.dtype.name, name=s.name)
                      for s in self.input_signature]
            model = self.get_model(*inputs)
            if not isinstance(model, keras.Model):
                raise TypeError(f"KerasModel: get_model returned {model!r}, not a keras.Model.")
            self.model = model
        return self.model

    def _build_cost(self, *tensors):
        num_inputs = len(self.input_signature)
        inputs, targets = list(tensors[:num_inputs]), list(tensors[num_inputs:])
        model = self._keras_model()
        outputs = model(inputs[0] if num_inputs == 1 else inputs)
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        if len(outputs) != len(targets):
            raise ValueError(f"KerasModel: the model has {len(outputs)} output(s) but "
                             f"target_signature has {len(targets)}: give one target per output.")
        loss_tensors = [tf.reduce_mean(fn(target, out), name=name)
                        for (name, fn), target, out in zip(self._losses, targets, outputs)]
        regularizers = [tf.cast(x, loss_tensors[0].dtype) for x in model.losses]
        total = tf.add_n(loss_tensors + regularizers, name=TOTAL_LOSS_NAME)
        metric_tensors = [tf.reduce_mean(tf.cast(fn(target, out), tf.float32), name=name)
                          for (name, fn), target, out in zip(self._metrics, targets, outputs)]
        if get_current_tower_context().is_main_training_tower:
            add_moving_summary(total, *loss_tensors, *metric_tensors)
        return total

    def fit(self, validation_data=None, **kwargs):
        """Train: ``Trainer.train_with_defaults(**kwargs)``.

        Args:
            validation_data (DataFlow | InputSource): if given, an ``InferenceRunner`` on it with
                ``ScalarStats`` of the losses, metrics and ``total_cost`` goes first among the
                callbacks.
            kwargs: the arguments of ``Trainer.train_with_defaults``.
        """
        if self._stats_to_inference is None:
            raise RuntimeError("KerasModel.fit before compile: call "
                               "compile(optimizer, loss, metrics) first.")
        if any(isinstance(cb, MaintainStepCounter) for cb in self.trainer.callbacks):
            raise RuntimeError(
                "KerasModel.fit was called before on this model: its trainer trains once (as in "
                "tensorpack). Train all the epochs in one fit (max_epoch=...), or continue in a "
                "new KerasModel: compile it and call fit(session_init=SmartInit(<checkpoint "
                "of the first fit, e.g. from ModelSaver>), starting_epoch=<next epoch>, ...).")
        callbacks = kwargs.pop("callbacks", None)
        callbacks = [] if callbacks is None else (
            [callbacks] if isinstance(callbacks, Callback) else list(callbacks))
        if validation_data is not None:
            callbacks.insert(0, InferenceRunner(validation_data,
                                                ScalarStats(self._stats_to_inference)))
        self.trainer.train_with_defaults(callbacks=callbacks, **kwargs)


@tensorpack_keywords(inputs_desc="input_signature", targets_desc="target_signature")
def setup_keras_trainer(trainer, get_model, input_signature, target_signature, input, optimizer,
                        loss, metrics):
    """Build a Keras model's training graph on ``trainer`` (tensorpack's function behind
    ``KerasModel.compile``); train it with ``trainer.train_with_defaults(...)``.

    Args:
        trainer (Trainer): a tfloop trainer whose graph is not built yet.
        get_model, input_signature, target_signature, input: as for :class:`KerasModel`.
        optimizer, loss, metrics: as for :meth:`KerasModel.compile`.

    Returns:
        KerasModel: the model, compiled; its ``model`` is the ``keras.Model``.

    Example:
        >>> setup_keras_trainer(trainer, get_model, [image_spec], [label_spec], QueueInput(df),
        ...                     tf.train.AdamOptimizer(1e-3), ["categorical_crossentropy"],
        ...                     ["categorical_accuracy"])
        >>> trainer.train_with_defaults(steps_per_epoch=100, max_epoch=3)
    """
    keras_model = KerasModel(get_model, input_signature, target_signature, input, trainer=trainer)
    keras_model.compile(optimizer, loss, metrics)
    return keras_model
