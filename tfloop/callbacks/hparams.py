"""The run's hyper-parameters in TensorBoard's HParams dashboard."""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from tfloop.callbacks.base import Callback
from tfloop.callbacks.param_base import HyperParamSetter

__all__ = ["HyperParams"]


def _hparam_value(value: Any) -> bool | float | str:
    """A value the HParams plugin takes: a bool, a number or a string (anything else as text)."""
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(())[()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    return value if isinstance(value, str) else str(value)


class HyperParams(Callback):
    """Put the run's hyper-parameters to TensorBoard's HParams dashboard, with its final metrics.

    At the end of the first epoch it puts the HParams plugin's session-start summary (through
    ``trainer.monitors``, so the ``TFEventWriter`` writes it into the run's event file, beside its
    scalars), and when training ends the session-end summary (finished or failed). The dashboard
    lists the run with these values, and as metrics the last value of every scalar of the run.

    The values are, later ones winning: ``max_epoch``, ``steps_per_epoch`` (``"one pass"`` when
    each epoch is one pass over data of unknown length), ``steps_per_run``
    and ``model`` (the ``ModelDesc``'s class) from the training's configuration; the value every
    ``HyperParamSetter`` (e.g. ``ScheduledHyperParamSetter("learning_rate", ...)``) set for the
    first epoch, under the parameter's name; and ``hparams``. Numbers, bools and strings are kept as
    they are, anything else as its text.

    Args:
        hparams (dict): ``{name: value}`` of your own, e.g. ``{"batch_size": 64, "opt": "adam"}``.

    Example:
        >>> TrainConfig(..., callbacks=[HyperParams({"batch_size": 64, "dropout": 0.3})])
    """

    def __init__(self, hparams: dict | None = None) -> None:
        if hparams is None:
            hparams = {}
        if not isinstance(hparams, dict) or not all(isinstance(k, str) and k for k in hparams):
            raise TypeError("HyperParams needs a dict of {name: value} with non-empty str names, "
                            f"got {hparams!r}.")
        self.hparams = dict(hparams)
        self.values: dict = {}
        self._started = False

    def collect(self) -> dict:
        """Every hyper-parameter of the run and its value, as written to the dashboard."""
        trainer = self.trainer
        steps = "one pass" if trainer.epochs_are_passes else trainer.steps_per_epoch
        values: dict = {"max_epoch": trainer.max_epoch, "steps_per_epoch": steps,
                        "steps_per_run": self.trainer.steps_per_run}
        model = self.trainer.model
        if model is not None:
            values["model"] = type(model).__name__
        for setter in self.trainer.callbacks_of(HyperParamSetter):
            values[setter.param.readable_name] = setter.get_current_value()
        values.update(self.hparams)
        return {name: _hparam_value(value) for name, value in values.items()}

    def _after_epoch(self):
        if not self._started:
            self._start()

    def _start(self):
        from tensorboard.plugins.hparams import summary_v2
        self._started = True
        self.values = self.collect()
        self.trainer.monitors.put_summary(summary_v2.hparams_pb(self.values))

    def _after_train(self):
        if not self._started:
            self._start()
        from tensorboard.plugins.hparams import api_pb2
        from tensorboard.plugins.hparams import summary as hparams_summary
        failed = self.trainer.training_error is not None
        status = api_pb2.STATUS_FAILURE if failed else api_pb2.STATUS_SUCCESS
        self.trainer.monitors.put_summary(hparams_summary.session_end_pb(status))

    def __str__(self):
        return f"HyperParams({sorted(self.hparams)})"
