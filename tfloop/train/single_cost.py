"""tensorpack's base class for writing a trainer, and its QueueInput-only SimpleTrainer.

A tensorpack trainer subclasses :class:`SingleCostTrainer` and implements ``_setup_graph(input,
get_cost_fn, get_opt_fn)``; it may return the training op (tfloop's way) or, as in tensorpack,
set ``self.train_op`` itself and return the callbacks it needs.
"""
from tfloop.compat import tf, tfv1
from tfloop.input.queue import QueueInput
from tfloop.tfutils.gradproc import FilterNoneGrad
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.train.tower import SimpleTrainer, TowerTrainer, check_cost, check_optimizer

__all__ = ["SingleCostTrainer", "QueueInputTrainer"]


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
            ``compute_gradients`` used by ``_make_get_grad_fn``.

    Example:
        >>> class MyTrainer(SingleCostTrainer):
        ...     def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        ...         with TowerContext("", is_training=True):
        ...             grads = self._make_get_grad_fn(input, get_cost_fn, get_opt_fn)()
        ...         self.train_op = get_opt_fn().apply_gradients(
        ...             grads, global_step=get_global_step_var(), name="train_op")
        ...         return []
    """

    COLOCATE_GRADIENTS_WITH_OPS = True
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
            grads = get_opt_fn().compute_gradients(
                cost, var_list=variables, gate_gradients=self.GATE_GRADIENTS,
                colocate_gradients_with_ops=self.COLOCATE_GRADIENTS_WITH_OPS,
                aggregation_method=self.AGGREGATION_METHOD)
            return FilterNoneGrad().process(grads)
        return get_grad_fn


class QueueInputTrainer(SimpleTrainer):
    """A :class:`SimpleTrainer` that accepts only a :class:`QueueInput` (tensorpack kept it for
    type checks; ``SimpleTrainer`` trains from a ``QueueInput`` just as well).

    Example:
        >>> launch_train_with_config(TrainConfig(model=M(), data=QueueInput(df)),
        ...                          QueueInputTrainer())
    """

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        if not isinstance(input, QueueInput):
            raise TypeError(f"QueueInputTrainer trains from a QueueInput, got {input!r}; use "
                            f"SimpleTrainer for other input sources.")
        return super()._setup_graph(input, get_cost_fn, get_opt_fn)
