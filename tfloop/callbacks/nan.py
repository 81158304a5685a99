"""Stopping training when the loss or chosen tensors hold NaN or Inf, checked with every step."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import UnknownNameError
from tfloop.utils.checks import check_names

__all__ = ["NonFiniteError", "NaNLossError", "TerminateOnNaN", "CheckNumerics"]


class NonFiniteError(RuntimeError):
    """A checked tensor holds NaN or Inf values.

    Attributes:
        names (list[str]): the tensors that hold them.
        global_step (int): the step whose ``session.run`` produced them (counted from 1).

    Example:
        >>> try:
        ...     launch_train_with_config(config, SimpleTrainer())
        ... except NonFiniteError as e:
        ...     print(e.names, e.global_step)
    """

    def __init__(self, message, names, global_step):
        super().__init__(message)
        self.names = list(names)
        self.global_step = global_step


class NaNLossError(NonFiniteError):
    """The loss became NaN or Inf (raised by :class:`TerminateOnNaN`).

    Example:
        >>> with pytest.raises(NaNLossError, match="cost"):
        ...     launch_train_with_config(config, SimpleTrainer())
    """


def _describe(name, nan, inf, size):
    if size == 1:
        return f"{name} is {'NaN' if nan else 'Inf'}"
    return f"{name} has {nan} NaN and {inf} Inf among its {size} values"


class _FiniteCheck(Callback):
    """Fetch, with every step, how many NaN and Inf values each checked tensor holds.

    Subclasses define ``_default_tensors()``: the ``(name, tensor)`` pairs checked without names.
    """

    _chief_only = False
    _error = NonFiniteError

    def __init__(self, names):
        if names is not None:
            names = check_names(names, type(self).__name__, "tensor or variable")
        self._names = names

    def _named_tensors(self):
        tensors = self.get_tensors_maybe_in_tower(self._names)
        variables = {v.handle.name: v for v in self.graph.get_collection(
            tfv1.GraphKeys.GLOBAL_VARIABLES) if hasattr(v, "handle")}
        checked = []
        for name, t in zip(self._names, tensors):
            if isinstance(t, tf.Tensor) and t.dtype == tf.resource and t.name in variables:
                t = variables[t.name].value()
            checked.append((name, t))
        return checked

    def _default_tensors(self):
        """``[(name, tensor)]`` to check when no names were given."""
        raise NotImplementedError(f"{type(self).__name__} must implement _default_tensors().")

    def _setup_graph(self):
        checked = self._default_tensors() if self._names is None else self._named_tensors()
        counts = []
        for name, t in checked:
            if not isinstance(t, tf.Tensor) or not t.dtype.is_floating:
                raise TypeError(f"{self} checks float tensors; {name!r} is "
                                f"{getattr(getattr(t, 'dtype', None), 'name', type(t).__name__)}.")
            counts.append(tf.stack([tf.reduce_sum(tf.cast(tf.math.is_nan(t), tf.int64)),
                                    tf.reduce_sum(tf.cast(tf.math.is_inf(t), tf.int64)),
                                    tf.size(t, out_type=tf.int64)]))
        self.checked_names = [name for name, _ in checked]
        self._counts = tf.stack(counts, name="nonfinite_counts")

    def _before_run(self, ctx):
        return self._counts

    def _after_run(self, ctx, values):
        counts = values.results
        bad = [(name, int(c[0]), int(c[1]), int(c[2]))
               for name, c in zip(self.checked_names, counts) if c[0] or c[1]]
        if bad:
            raise self._error(self._message(bad), [b[0] for b in bad], self.global_step)

    def _message(self, bad):
        return (f"{self} found non-finite values at global step {self.global_step} (epoch "
                f"{self.epoch_num}): {'; '.join(_describe(*b) for b in bad)}.")


class TerminateOnNaN(_FiniteCheck):
    """Stop training with :class:`NaNLossError` as soon as the loss is NaN or Inf.

    The loss (each training tower's cost, or the tensor ``cost``) is checked along with every step,
    in the step's own ``session.run``. The error names the tensor and the global step; training
    ends there, every callback's ``after_train`` still runs, and ``ModelSaver`` saves no final
    checkpoint, so the latest checkpoint is the last one saved before the loss diverged.

    Args:
        names (list[str]): tensors to check instead of the loss.

    Example:
        >>> callbacks = [ModelSaver(), TerminateOnNaN()]
    """

    _error = NaNLossError

    def __init__(self, names=None):
        super().__init__(names)

    def _default_tensors(self):
        towers = self.trainer.towers
        outputs = [h.outputs for h in towers.training()] if towers is not None else []
        losses = [t for t in outputs if isinstance(t, tf.Tensor) and t.shape.rank == 0]
        if losses:
            return [(t.name, t) for t in losses]
        try:
            return [("cost", self.get_tensors_maybe_in_tower(["cost"])[0])]
        except UnknownNameError as e:
            raise UnknownNameError("TerminateOnNaN found no loss to check: the trainer has no "
                                   f"training tower and {e}. Pass names=[...].") from None

    def _message(self, bad):
        return (f"Training stopped at global step {self.global_step} (epoch {self.epoch_num}): the "
                f"loss {'; '.join(_describe(*b) for b in bad)}. Lower the learning rate, check the "
                "input data or clip the gradients.")


class CheckNumerics(_FiniteCheck):
    """Stop training with :class:`NonFiniteError` when chosen tensors hold NaN or Inf.

    The number of NaN and Inf values of each tensor is computed in the graph and fetched along with
    every step (a small vector, not the tensors themselves). The error lists every tensor that holds
    any, with the counts. Wrap it in ``PeriodicCallback`` to check less often.

    Args:
        names (list[str]): tensor or variable names (looked up in the graph, then in the training
            tower); every trainable variable by default.

    Example:
        >>> callbacks = [CheckNumerics(["logits", "conv1/W"])]
        >>> callbacks = [PeriodicCallback(CheckNumerics(), every_k_steps=100)]
    """

    def __init__(self, names=None):
        super().__init__(names)

    def _default_tensors(self):
        variables = self.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)
        if not variables:
            raise ValueError("CheckNumerics found no trainable variables; pass names=[...].")
        return [(v.op.name, v.value()) for v in variables]
