"""Stopping training when a monitored stat stops improving."""
from tfloop.callbacks.base import StopTraining
from tfloop.callbacks.stat_monitor import StatMonitorCallback

__all__ = ["EarlyStopping"]


class EarlyStopping(StatMonitorCallback):
    """Raise :class:`StopTraining` when a monitored stat has not improved for a while.

    Each new value of the stat either improves on the best so far by more than ``min_delta`` (the
    count of checks without improvement goes back to 0) or not (the count goes up by one). When the
    count exceeds ``patience``, training stops, with a message naming the stat, its best value and
    the patience. With ``patience=2``, values 0.5, 0.4, 0.45, 0.41, 0.42 stop training at the fifth.

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

    Example:
        >>> callbacks = [InferenceRunner(data_val, [ScalarStats("cost", prefix="val")]),
        ...              EarlyStopping("val_cost", patience=3, min_delta=1e-3)]
    """

    def __init__(self, monitor_stat, mode="min", patience=0, min_delta=0.0):
        super().__init__(monitor_stat, mode=mode, min_delta=min_delta)
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 0:
            raise ValueError(f"patience must be an int >= 0, got {patience!r}.")
        self.patience = patience
        self.wait = 0
        self._triggered = False

    def _before_train(self):
        self.skip_values_before(self.global_step)

    def _trigger(self):
        self._triggered = True
        self._check(warn_missing=False)

    def _before_epoch(self):
        self._check(warn_missing=self._triggered)

    def _check(self, warn_missing):
        for step, value in self.read_new_values(warn_missing):
            if self.is_improvement(value):
                self.best, self.best_step, self.wait = value, step, 0
                continue
            self.wait += 1
            if self.wait > self.patience:
                raise StopTraining(
                    f"EarlyStopping: {self.stat!r} has not improved on its best {self.best} (global step {self.best_step}) by more "
                    f"than min_delta={self.min_delta} for {self.wait} value(s) in a row, more than patience={self.patience}; the latest "
                    f"is {value} at global step {step}.")

    def _state_dict(self):
        state = super()._state_dict()
        state["wait"] = self.wait
        return state

    def _load_state_dict(self, state):
        super()._load_state_dict(state)
        self.wait = state.get("wait", 0)
