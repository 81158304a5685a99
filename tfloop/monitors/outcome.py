"""How a training ended, as experiment trackers record it: finished, failed or killed."""
import signal
from typing import Any, NamedTuple

__all__ = ["TrainingOutcome", "training_outcome"]


class TrainingOutcome(NamedTuple):
    """How a training ended: ``status`` is ``"finished"`` (it ran to the end, or a callback
    stopped it cleanly), ``"failed"`` (it raised) or ``"killed"`` (SIGINT/SIGTERM, Ctrl-C);
    ``exit_code`` is the process exit code that goes with it (0, 1, or 128 + the signal)."""

    status: str
    exit_code: int


def _stop_signal():
    """The signal that tfloop's SIGTERM/SIGINT handler received during this training, or None.

    The handler is installed for the whole main loop, ``after_train`` included, so a monitor's
    ``after_train`` finds it still in place."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        handler = getattr(signal.getsignal(signum), "__self__", None)
        received = getattr(handler, "received", None)
        if received is not None and type(handler).__name__ == "SignalHandler":
            return received
    return None


def training_outcome(trainer: Any) -> TrainingOutcome:
    """How ``trainer``'s training ended; call it in ``after_train``.

    Example:
        >>> def _after_train(self):
        ...     outcome = training_outcome(self.trainer)
        ...     print(outcome.status, outcome.exit_code)   # finished 0
    """
    error = trainer.training_error
    if isinstance(error, KeyboardInterrupt):
        return TrainingOutcome("killed", 128 + signal.SIGINT)
    if isinstance(error, SystemExit):
        code = error.code if isinstance(error.code, int) else 1
        return TrainingOutcome("killed" if code > 128 else "failed", code)
    if error is not None:
        return TrainingOutcome("failed", 1)
    received = _stop_signal()
    if received is not None:
        return TrainingOutcome("killed", 128 + int(received))
    return TrainingOutcome("finished", 0)
