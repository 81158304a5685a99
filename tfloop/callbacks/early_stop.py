"""Stopping training when a monitored stat stops improving."""
from __future__ import annotations

from tfloop.callbacks.base import StopTraining
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.utils.checks import check_int

__all__ = ["EarlyStopping"]


class EarlyStopping(StatMonitorCallback):
    """Raise :class:`StopTraining` when a monitored stat has not improved for a while.

    Each new value of the stat either improves on the best so far by more than ``min_delta`` (the
    count of values without improvement goes back to 0) or not (the count goes up by one). When
    the count exceeds ``patience``, training stops, with a message naming the stat, its best value
    and the patience. With ``patience=2``, values 0.5, 0.4, 0.45, 0.41, 0.42 stop training at the
    fifth. The arguments mean what they mean in Keras' ``EarlyStopping``; tensorpack has none.

    New values are looked for at each trigger (every epoch by default) and right before each epoch,
    so a value put later in the same trigger round (by an ``InferenceRunner`` listed after this
    callback) stops training before any further step. A value that was not put again since the last
    check does not count twice.

    Args:
        monitor_stat (str): the stat's name, e.g. ``"val-error"``.
        mode (str): ``"min"`` when smaller is better, ``"max"`` when larger is better.
        patience (int): how many values in a row without improvement to tolerate.
        min_delta (float): an improvement must beat the best by more than this.

    Attributes:
        wait (int): values in a row without improvement so far.
        best (float), best_step (int): the best value and the global step it was put at.

    Example:
        >>> callbacks = [InferenceRunner(data_val, [ScalarStats("cost", prefix="val")]),
        ...              EarlyStopping("val_cost", patience=3, min_delta=1e-3)]
    """

    def __init__(self, monitor_stat: str, mode: str = "min", patience: int = 0,
                 min_delta: float = 0.0) -> None:
        super().__init__(monitor_stat, mode=mode, min_delta=min_delta)
        self.patience = check_int(patience, "EarlyStopping: patience", at_least=0)
        self.wait = 0

    def _on_new_value(self, step, value, improved):
        if improved:
            self.wait = 0
            return
        self.wait += 1
        if self.wait > self.patience:
            raise StopTraining(
                f"EarlyStopping: {self.monitor_stat!r} has not improved on its best {self.best} "
                f"(global step {self.best_step}) by more than min_delta={self.min_delta} for "
                f"{self.wait} value(s) in a row, more than patience={self.patience}; the latest "
                f"is {value} at global step {step}.")

    def _state_dict(self):
        state = super()._state_dict()
        state["wait"] = self.wait
        return state

    def _load_state_dict(self, state):
        super()._load_state_dict(state)
        self.wait = state.get("wait", 0)
