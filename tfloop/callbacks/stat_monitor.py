"""The shared logic of callbacks that watch a monitored stat: min or max, and the best so far."""
import difflib
import math

from tfloop.callbacks.base import Callback
from tfloop.utils import logger

__all__ = ["StatMonitorCallback"]

_MODES = ("min", "max")


class StatMonitorCallback(Callback):
    """Base class for callbacks that react to a scalar stat put to the monitors.

    It reads the latest value of ``stat`` (with the global step it was put at), knows whether a
    value improves on the best so far, and keeps that best in its state (saved with checkpoints).
    Used by ``MinSaver``/``MaxSaver``, ``EarlyStopping`` and ``StatMonitorParamSetter``.

    Args:
        stat (str): the monitored scalar's name, e.g. ``"val-error-top1"``.
        mode (str): ``"min"`` when smaller is better, ``"max"`` when larger is better.
        min_delta (float): an improvement must beat the best by more than this.

    Example:
        >>> class PrintBest(StatMonitorCallback):
        ...     def _trigger(self):
        ...         value = self.read_stat()
        ...         if value is not None and self.update_best(value):
        ...             print("new best", self.stat, value)
    """

    def __init__(self, stat, mode="min", min_delta=0.0):
        if not isinstance(stat, str) or not stat:
            raise ValueError(f"The monitored stat must be a non-empty name, got {stat!r}.")
        if mode not in _MODES:
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}.")
        if not isinstance(min_delta, (int, float)) or min_delta < 0:
            raise ValueError(f"min_delta must be a number >= 0, got {min_delta!r}.")
        self.stat = stat
        self.mode = mode
        self.min_delta = float(min_delta)
        self.best = None
        self.best_step = None
        self.stat_step = None
        self.last_seen_step = None
        self._warned_missing = False

    def _get_history(self, warn):
        try:
            return self.trainer.monitors.get_history(self.stat)
        except KeyError as e:
            if warn:
                self._check_misspelled()
            if warn and not self._warned_missing:
                logger.warning(f"{self}: {e}")
                self._warned_missing = True
            return []

    def _check_misspelled(self):
        """Once an epoch has ended with other stats put but never this one, a stat of a close name
        means a misspelling: raise rather than keep no best checkpoint and never stop."""
        if self.epoch_num <= self.trainer.loop.starting_epoch:
            return
        names = self.trainer.monitors.scalar_names()
        close = difflib.get_close_matches(self.stat, names, n=3, cutoff=0.8)
        if close:
            raise ValueError("{}: no stat named {!r} was put in the epochs so far, but {} {}: a "
                             "misspelling? Stats put so far: {}.".format(
                                 self, self.stat, "these were:" if len(close) > 1 else "this was:",
                                 ", ".join(repr(c) for c in close), ", ".join(names)))

    def read_stat(self):
        """The latest value of the stat, or None (with one warning) when it was never put."""
        history = self._get_history(warn=True)
        if not history:
            return None
        self.stat_step = history[-1][0]
        return history[-1][1]

    def read_new_values(self, warn_missing=False):
        """The ``(global_step, value)`` pairs of the stat put since the last call, oldest first.

        Values put at the same global step count once (the latest one). The last step seen is part
        of the state, so a resumed run does not read old values again.

        Args:
            warn_missing (bool): warn (once) when the stat was never put.
        """
        new = {}
        for step, value in self._get_history(warn_missing):
            if self.last_seen_step is None or step > self.last_seen_step:
                new[step] = value
        if new:
            self.last_seen_step = max(new)
        return sorted(new.items())

    def skip_values_before(self, step):
        """Make :meth:`read_new_values` ignore values put before global step ``step`` (e.g. the
        history of an earlier run), unless the state already records later values as seen."""
        if self.last_seen_step is None or self.last_seen_step < step - 1:
            self.last_seen_step = step - 1

    def read_history(self):
        """Every ``(global_step, value)`` of the stat so far (empty when never put)."""
        return self._get_history(warn=False)

    def is_improvement(self, value, reference=None):
        """Whether ``value`` beats ``reference`` (the best so far by default) by more than min_delta."""
        reference = self.best if reference is None else reference
        if value is None or math.isnan(value):
            return False
        if reference is None:
            return True
        if self.mode == "min":
            return value < reference - self.min_delta
        return value > reference + self.min_delta

    def update_best(self, value):
        """Record ``value`` as the best if it improves; returns whether it did."""
        if not self.is_improvement(value):
            return False
        self.best = value
        self.best_step = self.global_step
        return True

    def _state_dict(self):
        return {"best": self.best, "best_step": self.best_step,
                "last_seen_step": self.last_seen_step}

    def _load_state_dict(self, state):
        self.best = state.get("best")
        self.best_step = state.get("best_step")
        self.last_seen_step = state.get("last_seen_step")

    def __str__(self):
        return f"{type(self).__name__}({self.stat!r})"
