"""Requests a callback makes of the loop: end the current epoch, skip a step's update."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tfv1
from tfloop.tfutils.skip_gate import skip_update_gate
from tfloop.utils.checks import check_callable

__all__ = ["StopEpoch", "SkipUpdateWhen", "misplaced_stop_epoch"]


class StopEpoch(Exception):
    """Raise it in a callback's ``_trigger_step`` (or in a ``trigger()`` that a
    ``PeriodicTrigger`` calls after a step) to end the current epoch after this step. Raised in
    any other hook it fails training with an error naming the callback and the hook.

    The other callbacks' ``trigger_step`` still run for this step; then the rest of the epoch's
    steps are not run, and ``after_epoch`` and ``trigger_epoch`` run as at any
    epoch's end (so validation, saving and the epoch's stats happen), and training goes on with the
    next epoch. The message, if any, is logged. It is fastai's ``CancelEpochException`` and
    Lightning's ``on_train_batch_start`` returning ``-1`` (which ends the epoch there).

    Example:
        >>> class StepsCap(Callback):
        ...     def _trigger_step(self):
        ...         if self.local_step + 1 >= 100:
        ...             raise StopEpoch("100 steps are enough for this epoch")
    """


STOP_EPOCH_HOOK = "trigger_step"


def misplaced_stop_epoch(cb, hook, stop):
    """The error for ``StopEpoch`` raised by ``cb`` in ``hook``, a hook other than
    ``trigger_step``: there is no step whose end could end the epoch."""
    reason = f"({str(stop)!r})" if str(stop) else ""
    return RuntimeError(
        f"{cb} raised StopEpoch{reason} in {hook}: StopEpoch may be raised only in trigger_step "
        "(override _trigger_step), where it ends the epoch after that step. To end the whole "
        f"training from {hook}, raise StopTraining.")


class SkipUpdateWhen(Callback):
    """Skip the update of each step for which ``predicate(trainer)`` is true, before it runs.

    The step still runs: it takes its batch (the input stays in step with the global step), the
    global step advances, and every callback sees it; only the variables and the optimizer's
    state are left as they were. The model's optimizer must be wrapped in
    :class:`SkipUpdateGate`, which builds the update behind a gate that this callback feeds
    (fastai's ``CancelBatchException`` before the backward pass; Lightning's
    ``on_train_batch_start`` skip). ``skipped`` lists the global steps (numbered as
    ``trainer.global_step`` was before each) whose update was skipped.

    Args:
        predicate (callable): ``trainer -> bool``, called before each step; e.g.
            ``lambda trainer: trainer.global_step in bad_steps``.

    Example:
        >>> SkipUpdateWhen(lambda trainer: trainer.local_step % 10 == 9)   # every 10th step
    """

    _chief_only = False

    def __init__(self, predicate):
        self._predicate = check_callable(predicate, "SkipUpdateWhen: predicate")
        self.skipped = []
        self._skip = None

    def _setup_graph(self):
        gate = skip_update_gate(self.graph)
        if gate is None:
            raise ValueError(
                "SkipUpdateWhen needs the model's optimizer wrapped in SkipUpdateGate, which "
                "builds the update behind the gate it feeds: in optimizer(), return "
                "SkipUpdateGate(tf.compat.v1.train.AdamOptimizer(...)).")
        self._skip = tfv1.train.SessionRunArgs(fetches=[], feed_dict={gate: True})

    def _before_run(self, ctx):
        if self._predicate(self.trainer):
            self.skipped.append(self.global_step)
            return self._skip
        return None
