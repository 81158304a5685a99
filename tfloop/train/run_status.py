"""The run's status in its log directory: written as data when training starts and ends."""
from __future__ import annotations

import signal
from types import TracebackType
from typing import Any

from tfloop.callbacks.param_base import HyperParamSetter
from tfloop.utils import logger
from tfloop.utils.exit_status import is_clean_exit
from tfloop.utils.logdir_format import FAILED, FINISHED, RUNNING, STOPPED, write_run_status

__all__ = ["RunStatusRecorder", "training_outcome"]


def training_outcome(exc: BaseException | None, stop_reason: str | None,
                     global_step: int) -> tuple[str, str | None]:
    """``(state, reason)`` of a training that ended with ``exc`` (None: no exception).

    Args:
        exc: what :meth:`Trainer.train` raised, or None.
        stop_reason: the ``StopTraining`` message, when a callback stopped training cleanly.
        global_step: where training ended, named in the reason of a signal.

    Example:
        >>> training_outcome(None, "EarlyStopping: ...", 40)
        ('stopped', 'EarlyStopping: ...')
        >>> training_outcome(SystemExit(0), None, 40)
        ('stopped', 'SystemExit(0) at global step 40')
    """
    if exc is None or getattr(exc, "_tfloop_clean_stop", False):
        # An exception marked _tfloop_clean_stop reports a clean end to the caller (Optuna's
        # TrialPruned, Ray Tune's SystemExit(0)); the run stopped or finished, it did not fail.
        return (STOPPED, stop_reason) if stop_reason is not None else (FINISHED, None)
    if is_clean_exit(exc):   # sys.exit(0): exit status 0 is a clean stop
        return STOPPED, stop_reason or f"SystemExit({exc.code!r}) at global step {global_step}"
    if isinstance(exc, KeyboardInterrupt):
        return STOPPED, f"Ctrl-C (SIGINT) at global step {global_step}"
    if isinstance(exc, SystemExit) and isinstance(exc.code, int) and exc.code > 128:
        try:
            name = signal.Signals(exc.code - 128).name
        except ValueError:
            name = None
        if name is not None:
            return STOPPED, f"{name} at global step {global_step}"
    return FAILED, f"{type(exc).__name__}: {exc}"


class RunStatusRecorder:
    """Keeps ``<log dir>/status.json`` saying how the run stands: ``running`` (with its pid) on
    entering, then ``finished``, ``stopped`` (with the reason) or ``failed`` (with the error).

    Only the chief writes, and only when the run has a log directory (``trainer.logdir``). A
    failed write is a warning, never the end of training. ``tfloop info``/``stats``/``watch``
    read the file back through :func:`tfloop.utils.logdir_format.read_run_status`, which also
    tells a run that died.

    Args:
        trainer: the trainer; its ``stop_reason``, ``global_step``, ``epoch_num`` and callbacks
            (the hyper-parameters they set) are recorded at the end.

    Example:
        >>> with RunStatusRecorder(trainer):
        ...     trainer.main_loop(steps_per_epoch, starting_epoch, max_epoch)
    """

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.logdir = trainer.logdir if trainer.is_chief else None

    def _write(self, state, reason=None, **fields):
        try:
            write_run_status(self.logdir, state, reason, **fields)
        except OSError as e:
            logger.warning(f"Could not write the run's status ({state}) into {self.logdir}: "
                           f"{e}; tfloop info/watch will not know it.")

    def __enter__(self) -> RunStatusRecorder:
        if self.logdir is not None:
            self._write(RUNNING)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if self.logdir is None:
            return False
        trainer = self.trainer
        state, reason = training_outcome(exc, trainer.stop_reason,
                                         trainer.global_step)
        setters = trainer.callbacks_of(HyperParamSetter)
        self._write(state, reason, global_step=trainer.global_step, epoch_num=trainer.epoch_num,
                    hyper_params=sorted({s.param.readable_name for s in setters}))
        return False
