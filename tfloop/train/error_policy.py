"""How a training ends: the trainer's error policy around its main loop, in one place."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from types import TracebackType

from tfloop.callbacks.base import StopTraining
from tfloop.callbacks.group import Callbacks
from tfloop.compat import tf
from tfloop.input.base import InputSource
from tfloop.train.loop import TrainLoop
from tfloop.utils import logger
from tfloop.utils.exit_status import is_clean_exit

__all__ = ["TrainingErrorPolicy"]


class TrainingErrorPolicy:
    """The context manager a trainer runs its main loop in; it decides how training ends.

    - ``StopTraining`` (raised by a callback, or by the loop when a hook requested a stop) ends
      training cleanly: logged, not re-raised.
    - ``SystemExit`` with exit status 0 (``sys.exit()``, ``sys.exit(0)``, Ray Tune ending a trial
      from ``tune.report``) ends training cleanly too, and is re-raised once every
      ``after_train`` ran, so that the process exits as it asked. A nonzero status is a failure.
    - ``KeyboardInterrupt`` (Ctrl-C) and any other exception are logged with the global step and
      re-raised once every ``after_train`` ran.
    - A ``tf.errors.OutOfRangeError`` raised during an epoch's steps means the input ran out before
      ``steps_per_epoch`` steps: it becomes a ``ValueError`` that names the input and the fix;
      from an input that marks the ends of passes (whose data is repeated), it means the data
      yields nothing.
    - ``loop.training_error`` (``trainer.training_error``) is set to the error that ended
      training (None for a clean end) before ``after_train`` runs, so callbacks can tell a
      failed run from a finished one.
    - After a clean end, ``loop_end_listeners`` are called before any ``after_train`` (a
      ``ModelSaver`` saves its final checkpoint there, before an ``after_train`` may load other
      weights). ``after_train`` of every callback always runs. When it (or a listener) raises
      after a clean end, that error propagates; after a failed run it is logged and the first
      error is re-raised.
    - ``announce_checkpoints`` (the trainer's) is called once the loop ended, after the loop-end
      listeners and before any ``after_train``, whether training failed or not, and again once
      every ``after_train`` ran: the checkpoints saved at the end (the last trigger round's,
      ``ModelSaver``'s final one) get their resume states with every callback's state from
      before ``after_train``, wherever the callbacks are listed.

    Args:
        loop (TrainLoop): the loop whose position it logs and whose ``training_error`` it sets.
        callbacks (Callbacks): the group of the trainer's callbacks, whose ``after_train`` it runs.
        input_source (InputSource): the trainer's input, named when it runs out.
        loop_end_listeners (list): functions of no argument called after a clean end, before
            ``after_train``.
        announce_checkpoints (callable): hands the checkpoints saved so far to the trainer's
            listeners (``Trainer.announce_checkpoints``); None: nothing to announce.

    Example:
        >>> policy = TrainingErrorPolicy(loop, callbacks, input_source)
        >>> with policy:
        ...     callbacks.before_train()
        ...     for _ in loop.epochs():
        ...         ...
    """

    def __init__(self, loop: TrainLoop, callbacks: Callbacks, input_source: InputSource | None,
                 loop_end_listeners: Sequence[Callable[[], None]] = (),
                 announce_checkpoints: Callable[[], None] | None = None) -> None:
        self.loop = loop
        self.callbacks = callbacks
        self.input_source = input_source
        self.loop_end_listeners = loop_end_listeners
        self.announce_checkpoints = announce_checkpoints or (lambda: None)

    def __enter__(self) -> TrainingErrorPolicy:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        error = self._error_to_raise(exc)
        self.loop.training_error = error
        try:
            self._end(clean=error is None)
        except BaseException as after_train_error:
            if error is None:
                raise after_train_error from None  # not "during handling of StopTraining"
            logger.error(f"after_train also failed: {type(after_train_error).__name__}: "
                         f"{after_train_error}")
        if error is None:
            return not is_clean_exit(exc)   # a clean SystemExit still exits the process
        if error is exc:
            return False
        raise error from None

    def _end(self, clean):
        """Every loop-end listener (after a clean end), the checkpoints' announcement, every
        ``after_train``, the announcement of what they saved, however any of them fails; the
        first error is raised afterwards."""
        first_error = None
        for end in [*(self.loop_end_listeners if clean else ()), self.announce_checkpoints,
                    self.callbacks.after_train, self.announce_checkpoints]:
            try:
                end()
            except BaseException as e:
                first_error = first_error or e
        if first_error is not None:
            raise first_error

    def _error_to_raise(self, exc):
        """Log how training ended; return the error to raise after ``after_train`` (None for a
        clean end)."""
        loop = self.loop
        if exc is None:
            return None
        if isinstance(exc, StopTraining):
            loop.request_stop(str(exc) or type(exc).__name__)
            logger.info(f"Training stopped: {loop.stop_reason}")
            return None
        if is_clean_exit(exc):
            loop.request_stop(f"SystemExit({exc.code!r}) at global step {loop.global_step}, a "
                              "clean exit (status 0)")
            logger.info(f"Training stopped: {loop.stop_reason}")
            return None
        if isinstance(exc, KeyboardInterrupt):
            logger.info(f"Ctrl-C: stopping training at global step {loop.global_step}.")
            return exc
        if isinstance(exc, tf.errors.OutOfRangeError) and loop.running_steps:
            source = self.input_source
            exc = empty_data_error(loop, source) if source is not None and \
                source.marks_pass_ends() else input_ran_out_error(loop, source)
        logger.error(f"Training failed at global step {loop.global_step}: "
                     f"{type(exc).__name__}: {exc}")
        return exc


def input_ran_out_error(loop, input_source):
    """The error for an input that ran out during an epoch's steps: empty from the first step, or
    shorter than ``steps_per_epoch`` and not repeated."""
    source = input_source if input_source is not None else "input"
    if loop.global_step == 0:
        return ValueError(f"The input {source} yielded no data at the first step: it is empty. "
                          "Check what builds it (a filter that drops everything, an empty file "
                          "list).")
    return ValueError(
        f"The input {source} ran out at step {loop.local_step} of epoch {loop.epoch_num} (global "
        f"step {loop.global_step}), before the epoch's steps_per_epoch={loop.steps_per_epoch} "
        "steps: it is not repeated and has fewer batches. Leave steps_per_epoch out to make each "
        "epoch one pass over the data, or give the data as it is (data=dataset, or "
        "DatasetInput(dataset) with repeat=True, the default), which tfloop repeats.")


def empty_data_error(loop, input_source):
    """The error for data that yields no batch, from an input that repeats it and marks the ends
    of its passes (the repeated data ends only when it is empty)."""
    described = input_source.describe_pipeline() if input_source is not None else None
    pipeline = f" (its pipeline: {described})" if described else ""
    towers = input_source.batches_per_step if input_source is not None else 1
    need = (f"; each step takes {towers} batches, one per tower, so a pass needs at least "
            f"{towers}" if towers > 1 else "")
    return ValueError(
        f"The input {input_source}{pipeline} yielded no batch in epoch {loop.epoch_num}: its "
        f"data is empty{need}. Check what builds it (a filter that drops everything, an empty "
        "file list).")
