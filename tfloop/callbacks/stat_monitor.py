"""The shared base of callbacks that watch a monitored stat: min or max, and the best so far."""
from __future__ import annotations

import difflib
import math

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.utils import logger
from tfloop.utils.checks import check_bool, check_number, check_one_of

__all__ = ["StatMonitorCallback"]

MODES = ("min", "max")


class StatMonitorCallback(Callback):
    """Base class of callbacks that react to each new value of a scalar stat put to the monitors.

    The base finds the stat, reads the values put since it last looked, decides for each whether
    it improves on the best so far, keeps that best (and the global step it was put at) in its
    state, and calls :meth:`_on_new_value` once per value, oldest first. A subclass implements
    only that method. Values are looked for at each trigger, once the epoch's trigger round is
    over (the trainer's ``epoch_end_listeners``) and right before each epoch, so a value put
    later in the same round (by an ``InferenceRunner`` listed after this callback) is seen in
    that epoch, and a stop it causes ends training after it. Values put at the same global step
    count once (the latest), and a resumed run does not see its earlier run's values again.

    A value improves when it beats the best so far by more than ``min_delta`` (smaller with
    ``mode="min"``, larger with ``mode="max"``); the first value always improves and NaN never
    does. When the stat is never put, one warning says so; when, after the first epoch, stats
    were put but not this one and one has a close name, a ``ValueError`` names the likely
    misspelling.

    Used by ``EarlyStopping``, ``MinSaver``/``MaxSaver`` and ``StatMonitorParamSetter``.

    Args:
        monitor_stat (str): the monitored scalar's name, e.g. ``"val-error-top1"``.
        mode (str): ``"min"`` when smaller is better, ``"max"`` when larger is better.
        min_delta (float): an improvement must beat the best by more than this (>= 0).
        stat (str): an earlier name of ``monitor_stat``, accepted as an alias.

    Attributes:
        best (float): the best value so far, or None.
        best_step (int): the global step at which the best value was put, or None.

    Example:
        >>> class PrintBest(StatMonitorCallback):
        ...     def _on_new_value(self, step, value, improved):
        ...         if improved:
        ...             print(f"new best {self.monitor_stat}={value} at global step {step}")
        >>> PrintBest("val-error", mode="min", min_delta=0.01)
    """

    def __init__(self, monitor_stat: str | None = None, mode: str = "min",
                 min_delta: float = 0.0, *, stat: str | None = None) -> None:
        monitor_stat, given_as = self._alias("monitor_stat", monitor_stat, "stat", stat)
        if not isinstance(monitor_stat, str) or not monitor_stat:
            raise ValueError(f"{type(self).__name__}: {given_as} must be the monitored stat's "
                             f"name, a non-empty string, got {monitor_stat!r}.")
        self.monitor_stat = monitor_stat
        self.mode = check_one_of(mode, f"{type(self).__name__}: mode", MODES)
        check_number(min_delta, f"{type(self).__name__}: min_delta", at_least=0)
        self.min_delta = float(min_delta)
        self.best: float | None = None
        self.best_step: int | None = None
        self.last_seen_step: int | None = None
        self._triggered = False
        self._warned_missing = False

    def _alias(self, name, value, alias, alias_value):
        """``(value, the name it was given by)`` of the argument ``name``, which can also be given
        as ``alias`` (its name in tensorpack or an earlier tfloop); None means "not given".

        Raises:
            TypeError: both were given.
        """
        if alias_value is None:
            return value, name
        if value is not None:
            raise TypeError(f"{type(self).__name__} got both {alias}={alias_value!r} and "
                            f"{name}={value!r}, which set the same thing ({alias} is another "
                            f"name for {name}); give only one of them.")
        return alias_value, alias

    def _mode_or_reverse(self, mode, reverse):
        """The mode given as ``mode`` or as tensorpack's ``reverse`` (True: ``"max"``); ``"min"``
        when neither is given.

        Raises:
            TypeError: both were given, or ``reverse`` is not a bool.
        """
        mode, given_as = self._alias("mode", mode, "reverse", reverse)
        if given_as == "mode":
            return "min" if mode is None else mode
        check_bool(reverse, f"{type(self).__name__}: reverse", note="True: larger is better")
        return "max" if reverse else "min"

    @property
    def stat(self) -> str:
        """The monitored stat's name (an alias of :attr:`monitor_stat`)."""
        return self.monitor_stat

    # ---- what a subclass implements --------------------------------------------------------------
    def _on_new_value(self, step: int, value: float, improved: bool) -> None:
        """React to a new value of the stat.

        Args:
            step (int): the global step the value was put at.
            value (float): the value.
            improved (bool): whether it beat the best so far by more than ``min_delta``; when it
                did, :attr:`best` and :attr:`best_step` already hold it.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement "
                                  "_on_new_value(step, value, improved).")

    # ---- when values are looked for ------------------------------------------------------------
    def _before_train(self):
        self.skip_values_before(self.global_step)
        self.trainer.epoch_end_listeners.append(self._epoch_round_over)

    def _trigger(self):
        self._triggered = True
        self.poll(warn_missing=False)

    def _epoch_round_over(self):
        """The trainer's epoch-end listener: the values put after this callback's trigger in the
        epoch's round; a ``StopTraining`` they raise becomes a stop request, so training ends
        after this epoch once every other listener has run."""
        try:
            self.poll(warn_missing=False)
        except StopTraining as stop:
            self.trainer.request_stop(str(stop) or type(stop).__name__)

    def _before_epoch(self):
        self.poll(warn_missing=self._triggered)

    def poll(self, warn_missing: bool = False) -> None:
        """Hand every value put since the last look to :meth:`_on_new_value`, oldest first.

        Args:
            warn_missing (bool): warn (once) when the stat was never put.
        """
        for step, value in self.read_new_values(warn_missing):
            improved = self.is_improvement(value)
            if improved:
                self.best, self.best_step = value, step
            self._on_new_value(step, value, improved)

    # ---- reading the stat ------------------------------------------------------------------------
    def _get_history(self, warn):
        try:
            return self.trainer.monitors.get_history(self.monitor_stat)
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
        if self.epoch_num <= self.trainer.starting_epoch:
            return
        names = self.trainer.monitors.scalar_names()
        close = difflib.get_close_matches(self.monitor_stat, names, n=3, cutoff=0.8)
        if close:
            these = "these were:" if len(close) > 1 else "this was:"
            raise ValueError(f"{self}: no stat named {self.monitor_stat!r} was put in the epochs "
                             f"so far, but {these} {', '.join(repr(c) for c in close)}: a "
                             f"misspelling? Stats put so far: {', '.join(names)}.")

    def read_stat(self) -> float | None:
        """The newest value of the stat, or None (with one warning) when it was never put."""
        history = self._get_history(warn=True)
        return history[-1][1] if history else None

    def read_new_values(self, warn_missing: bool = False) -> list[tuple[int, float]]:
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

    def skip_values_before(self, step: int) -> None:
        """Make :meth:`read_new_values` ignore values put before global step ``step`` (e.g. the
        history of an earlier run), unless the state already records later values as seen."""
        if self.last_seen_step is None or self.last_seen_step < step - 1:
            self.last_seen_step = step - 1

    def read_history(self) -> list[tuple[int, float]]:
        """Every ``(global_step, value)`` of the stat so far (empty when never put)."""
        return self._get_history(warn=False)

    def is_improvement(self, value: float | None, reference: float | None = None) -> bool:
        """Whether ``value`` beats ``reference`` (the best so far by default) by more than
        ``min_delta``. NaN never does; anything does when there is no reference yet."""
        reference = self.best if reference is None else reference
        if value is None or math.isnan(value):
            return False
        if reference is None:
            return True
        if self.mode == "min":
            return value < reference - self.min_delta
        return value > reference + self.min_delta

    # ---- state -----------------------------------------------------------------------------------
    def _state_dict(self):
        return {"best": self.best, "best_step": self.best_step,
                "last_seen_step": self.last_seen_step}

    def _load_state_dict(self, state):
        self.best = state.get("best")
        self.best_step = state.get("best_step")
        self.last_seen_step = state.get("last_seen_step")

    def __str__(self):
        return f"{type(self).__name__}({self.monitor_stat!r})"
