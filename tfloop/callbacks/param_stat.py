"""Setting a hyper-parameter by a monitored stat's progress: StatMonitorParamSetter."""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from typing import Any

from tfloop.callbacks.param_base import HyperParam, HyperParamSetter
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.utils import logger
from tfloop.utils.checks import check_callable, check_int, check_number

__all__ = ["StatMonitorParamSetter"]


class StatMonitorParamSetter(HyperParamSetter, StatMonitorCallback):
    """Change a hyper-parameter when a monitored stat stops improving.

    At each trigger the stat's latest value, when it was put since the last trigger during this
    run, joins a window of the last ``last_k`` values. When the window is full and none of its
    later values beats the oldest one by more than ``threshold`` (lower is better; higher with
    ``reverse=True``), the parameter is set to ``value_func(current value)`` and the window is
    emptied, so the next change can come ``last_k`` triggers later at the earliest. A trigger with
    no new value of the stat adds nothing. The parameter is not touched in ``before_train``. The
    window and the last change are saved in the callback's state.

    The arguments are tensorpack's, in its order; the names of the stat-watching family are
    accepted as keywords for three of them: ``monitor_stat`` for ``stat_name``, ``mode="max"``
    for ``reverse=True`` and ``min_delta`` for ``threshold``. Giving both names of one is a
    TypeError.

    Args:
        param (str or HyperParam): the parameter, e.g. ``"learning_rate"``.
        stat_name (str): the monitored scalar, e.g. ``"val-error"`` (or ``monitor_stat=``).
        value_func (callable): ``value_func(current value) -> new value``.
        threshold (float): how much better than the oldest value counts as an improvement (>= 0;
            or ``min_delta=``; 0 when neither is given).
        last_k (int): the window's length, >= 2.
        reverse (bool): higher values of the stat are better (or ``mode="max"``).

    Attributes:
        history (deque): the window, ``(global_step, value)`` pairs.
        last_change_step (int): the global step of the last change, or None.
        best (float), best_step (int): the best value seen and the global step it was put at.

    Example:
        >>> StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.2,
        ...                        threshold=0, last_k=5)    # no better in 5 epochs: lr / 5
        >>> StatMonitorParamSetter("learning_rate", monitor_stat="val-accuracy", mode="max",
        ...                        value_func=lambda lr: lr * 0.2, min_delta=0.01, last_k=5)
    """

    def __init__(self, param: str | HyperParam, stat_name: str | None = None,
                 value_func: Callable[[Any], Any] | None = None, threshold: float | None = None,
                 last_k: int | None = None, reverse: bool | None = None, *,
                 monitor_stat: str | None = None, mode: str | None = None,
                 min_delta: float | None = None) -> None:
        HyperParamSetter.__init__(self, param)
        monitor_stat, _ = self._alias("monitor_stat", monitor_stat, "stat_name", stat_name)
        min_delta, delta_name = self._alias("min_delta", min_delta, "threshold", threshold)
        min_delta = 0.0 if min_delta is None else min_delta
        check_number(min_delta, f"{type(self).__name__}: {delta_name}", at_least=0)
        StatMonitorCallback.__init__(self, monitor_stat, mode=self._mode_or_reverse(mode, reverse),
                                     min_delta=min_delta)
        self.value_func = check_callable(value_func, f"{type(self).__name__}: value_func",
                                         signature="value_func(current value) -> new value")
        self.last_k = check_int(last_k, f"{type(self).__name__}: last_k", at_least=2,
                                note="the number of values to compare")
        self.history: deque[tuple[int, float]] = deque(maxlen=self.last_k)
        self.last_change_step = None
        self._latest = None
        self._warned_stale = False

    @property
    def stat_name(self) -> str:
        """The monitored stat (tensorpack's name for :attr:`monitor_stat`)."""
        return self.monitor_stat

    @property
    def threshold(self) -> float:
        """tensorpack's name for :attr:`min_delta`."""
        return self.min_delta

    @property
    def reverse(self) -> bool:
        """Whether higher values are better (tensorpack's name for ``mode == "max"``)."""
        return self.mode == "max"

    def _before_train(self):
        StatMonitorCallback._before_train(self)

    def _before_epoch(self):
        HyperParamSetter._before_epoch(self)

    def _trigger(self):
        self.poll(warn_missing=True)
        HyperParamSetter._trigger(self)

    def _on_new_value(self, step, value, improved):
        self._latest = (step, value)

    def _best_of(self, values):
        values = [v for v in values if not math.isnan(v)]
        if not values:
            return None
        return min(values) if self.mode == "min" else max(values)

    def _get_value_to_set(self):
        latest, self._latest = self._latest, None
        if latest is None:
            if self.read_history() and not self._warned_stale:
                self._warned_stale = True
                logger.warning(f"{self}: triggered without a new value of {self.monitor_stat!r} "
                               "since the last trigger; it is put less often than this callback "
                               "runs.")
            return None
        self.history.append(latest)
        if len(self.history) < self.last_k:
            return None
        values = [v for _, v in self.history]
        if self.is_improvement(self._best_of(values[1:]), reference=values[0]):
            return None
        self.history.clear()
        self.last_change_step = self.global_step
        logger.info(f"{self}: no improvement of {self.monitor_stat} by more than "
                    f"{self.min_delta} in {values}; changing {self.param.readable_name}.")
        return self.value_func(self.get_current_value())

    def _state_dict(self):
        state = HyperParamSetter._state_dict(self)
        state.update(StatMonitorCallback._state_dict(self))
        state.update(history=[list(entry) for entry in self.history],
                     last_change_step=self.last_change_step)
        return state

    def _load_state_dict(self, state):
        HyperParamSetter._load_state_dict(self, state)
        StatMonitorCallback._load_state_dict(self, state)
        self.history = deque((tuple(entry) for entry in state.get("history", [])),
                             maxlen=self.last_k)
        self.last_change_step = state.get("last_change_step")

    def __str__(self):
        return f"{type(self).__name__}({self.param.readable_name!r}, {self.monitor_stat!r})"

    __repr__ = __str__
