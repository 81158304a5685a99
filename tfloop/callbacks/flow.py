"""Requests a callback makes of the loop by raising: end the current epoch now."""

__all__ = ["StopEpoch"]


class StopEpoch(Exception):
    """Raise it in a callback's ``_trigger_step`` to end the current epoch after this step.

    The rest of the epoch's steps are not run; ``after_epoch`` and ``trigger_epoch`` run as at any
    epoch's end (so validation, saving and the epoch's stats happen), and training goes on with the
    next epoch. The message, if any, is logged. It is fastai's ``CancelEpochException`` and
    Lightning's ``on_train_batch_start`` returning ``-1`` (which ends the epoch there).

    Example:
        >>> class StepsCap(Callback):
        ...     def _trigger_step(self):
        ...         if self.local_step + 1 >= 100:
        ...             raise StopEpoch("100 steps are enough for this epoch")
    """
