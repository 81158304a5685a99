"""Keras callbacks in a tfloop training: ``KerasCallback`` gives them the ``logs``, the model's
``stop_training``, the learning rate and the weights they expect from ``fit``."""
from __future__ import annotations

import math
import sys
from typing import Any

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.callbacks.early_stop import load_weights, model_weights
from tfloop.callbacks.nan import NaNLossError
from tfloop.callbacks.param_base import GraphVarParam
from tfloop.callbacks.schedule import Schedule
from tfloop.compat import tf
from tfloop.tfutils.common import UnknownNameError
from tfloop.utils import logger

__all__ = ["KerasCallback", "TrainerModel", "is_keras_callback", "wrap_keras_callbacks"]

# Keras callbacks that need what only Keras' own model has, and what tfloop has instead.
_REFUSED = {
    "ModelCheckpoint": "tfloop's ModelSaver (every epoch) or MinSaver/MaxSaver (the best by a "
                       "stat), which save the graph's variables",
    "TensorBoard": "tfloop's TFEventWriter monitor (a default: scalars and the graph), with "
                   "TensorBoardSummaries(histograms=True, images=[...]), HyperParams({...}) and "
                   "TensorBoardProfiler(start_step, stop_step) for the other dashboards",
    "BackupAndRestore": "tfloop's AutoResumeTrainConfig, which resumes at the exact step",
    "SwapEMAWeights": "tfloop's EMA of variables with a predictor on them",
}
# Keras callbacks that cannot work without the learning-rate variable.
_NEEDS_LR = ("ReduceLROnPlateau", "LearningRateScheduler")


def is_keras_callback(obj: Any) -> bool:
    """Whether ``obj`` is a Keras callback (without importing Keras when no one did)."""
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(obj, keras.callbacks.Callback)


def wrap_keras_callbacks(callbacks: Any) -> Any:
    """``callbacks`` (None, one callback or an iterable) with every Keras callback wrapped in a
    :class:`KerasCallback`; anything else is left for the caller's checks."""
    if callbacks is None or isinstance(callbacks, Callback):
        return callbacks
    if is_keras_callback(callbacks):
        return [KerasCallback(callbacks)]
    try:
        items = list(callbacks)
    except TypeError:
        return callbacks
    return [KerasCallback(cb) if is_keras_callback(cb) else cb for cb in items]


def _eager():
    """Keras callbacks compute with Keras ops, which must run eagerly: the trainer's graph is
    finalized."""
    return tf.__internal__.eager_context.eager_mode()


class _Optimizer:
    """``model.optimizer`` as a Keras callback sees it: its ``learning_rate`` reads and writes the
    training graph's learning-rate variable."""

    def __init__(self, model: TrainerModel) -> None:
        self._model = model

    @property
    def learning_rate(self) -> float:
        return float(self._model.lr_param().get_value())

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self._model.set_learning_rate(value)


class TrainerModel:
    """What a Keras callback wrapped in :class:`KerasCallback` sees as ``self.model``.

    Attributes:
        stop_training (bool): set it to end training, as in Keras: after the epoch (from an epoch
            hook) or after the step (from a batch hook).
        optimizer: its ``learning_rate`` is the graph's learning-rate variable, read and written
            through the session (the train op uses the new value from the next step on).
    """

    def __init__(self, owner: KerasCallback) -> None:
        self._owner = owner
        self.stop_training = False
        self.optimizer = _Optimizer(self)

    def lr_param(self) -> GraphVarParam:
        return self._owner.lr_param()

    def set_learning_rate(self, value: Any) -> None:
        param = self.lr_param()
        param.set_value(float(value))
        self._owner.trainer.monitors.put_scalar(param.readable_name, float(param.get_value()))

    def get_weights(self) -> list:
        """The model's weights (see :func:`~tfloop.callbacks.early_stop.model_weights`), read
        through the session."""
        return self._owner.trainer.sess.run(self._owner.weights)

    def set_weights(self, weights: list) -> None:
        """Load ``weights`` (as :meth:`get_weights` returned them) into the graph's variables."""
        load_weights(self._owner.trainer.sess, self._owner.weights, list(weights))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{self._owner}: a Keras callback in tfloop sees a model with only stop_training, "
            f"optimizer.learning_rate, get_weights() and set_weights(); it asked for {name!r}, "
            "which only a keras.Model trained by fit has.")


def _overrides(cb: Any, *names: str) -> bool:
    return any(not getattr(getattr(type(cb), name), "_is_default", False) for name in names)


class KerasCallback(Callback):
    """Run a Keras callback (``keras.callbacks.Callback``) in a tfloop training, as ``fit`` would.

    ``TrainConfig(callbacks=[...])`` wraps Keras callbacks in it by itself. The Keras callback
    gets ``on_train_begin``/``on_train_end``, ``on_epoch_begin``/``on_epoch_end`` (with Keras'
    0-based epoch index) and, only when it overrides them (they cost a Python call per step),
    ``on_train_batch_begin``/``on_train_batch_end`` with ``{"loss": cost}``. Its epoch ``logs``
    hold the latest value of every scalar put to the monitors during the epoch and its trigger
    round, under tfloop's names (``"cost"``, ``"val_cost"`` from
    ``ScalarStats("cost", prefix="val")``); ``on_epoch_end`` runs once every callback's trigger
    round is over (the trainer's ``epoch_end_listeners``), so an ``InferenceRunner`` listed
    anywhere has put its results, and a stop it asks for ends training after that epoch, as in
    ``fit``: no callback begins the next one. Its ``self.model`` is a
    :class:`TrainerModel`: ``stop_training`` ends training, ``optimizer.learning_rate`` is the
    graph variable ``learning_rate`` (what ``ReduceLROnPlateau`` and ``LearningRateScheduler``
    change is what the train op uses; each change is put as a scalar), and
    ``get_weights``/``set_weights`` (``EarlyStopping(restore_best_weights=True)``) go through the
    session. Keras' ``ModelCheckpoint``, ``TensorBoard`` and ``BackupAndRestore`` are refused,
    naming tfloop's counterpart. A stop asked from a batch hook after a step whose loss is NaN
    or Inf (Keras' ``TerminateOnNaN``) is a failure, as with tfloop's ``TerminateOnNaN``: it
    raises :class:`~tfloop.callbacks.nan.NaNLossError`, and no checkpoint of the diverged
    weights is saved.

    Args:
        keras_callback (keras.callbacks.Callback): the callback.
        learning_rate (str): the name of the learning-rate variable, found as
            ``ScheduledHyperParamSetter`` finds it.

    Example:
        >>> TrainConfig(..., callbacks=[
        ...     KerasCallback(keras.callbacks.ReduceLROnPlateau("val_cost", patience=2)),
        ...     keras.callbacks.CSVLogger("epochs.csv")])                 # wrapped by itself
    """

    def __init__(self, keras_callback: Any, learning_rate: str = "learning_rate") -> None:
        if not is_keras_callback(keras_callback):
            raise TypeError(f"KerasCallback needs a keras.callbacks.Callback, got "
                            f"{keras_callback!r} ({type(keras_callback).__name__}).")
        kind = type(keras_callback).__name__
        for refused, instead in _REFUSED.items():
            if kind == refused and type(keras_callback).__module__.startswith("keras"):
                raise TypeError(f"keras.callbacks.{kind} needs a keras.Model trained by fit and "
                                f"cannot run in tfloop; use {instead}.")
        self.keras_callback = keras_callback
        self._lr_name = learning_rate
        self._batch_hooks = _overrides(keras_callback, "on_train_batch_begin",
                                       "on_train_batch_end", "on_batch_begin", "on_batch_end")
        self.when = Schedule(fetches=self._batch_hooks)
        self.model: TrainerModel | None = None
        self.weights: list = []
        self._lr: GraphVarParam | None = None
        self._lr_error: Exception | None = None
        self._pending_epoch: int | None = None
        self._epoch_start = 0
        self._last_logs: dict = {}
        self._cost = None

    # ---- what the model reads --------------------------------------------------------------------
    def lr_param(self) -> GraphVarParam:
        if self._lr is None:
            raise AttributeError(f"{self}: the Keras callback uses model.optimizer.learning_rate, "
                                 f"but {self._lr_error}")
        return self._lr

    def _setup_graph(self):
        self.model = TrainerModel(self)
        self.weights = model_weights(self.graph)
        param = GraphVarParam(self._lr_name)
        try:
            param.setup_graph()
            self._lr = param
        except (UnknownNameError, ValueError, TypeError) as e:
            self._lr_error = e
            if type(self.keras_callback).__name__ in _NEEDS_LR:
                raise type(e)(f"{self}: {e}") from None
        if self._batch_hooks:
            self._cost = self._find_cost()
        self.trainer.epoch_end_listeners.append(self._epoch_round_over)
        with _eager():
            self.keras_callback.set_model(self.model)

    def _find_cost(self):
        """The first training tower's cost (what the optimizer minimizes), else the tensor
        ``cost``, else None."""
        towers = self.trainer.towers
        outputs = [h.outputs for h in towers.training()] if towers is not None else []
        losses = [t for t in outputs if isinstance(t, tf.Tensor) and t.shape.rank == 0]
        if losses:
            return losses[0]
        try:
            return self.get_tensors_maybe_in_tower(["cost"])[0]
        except UnknownNameError:
            logger.warning(f"{self}: no training tower's cost nor tensor 'cost', so the batch "
                           "logs hold no 'loss'.")
            return None

    # ---- the hooks -------------------------------------------------------------------------------
    def _before_train(self):
        trainer = self.trainer
        self.keras_callback.set_params({"epochs": trainer.max_epoch, "verbose": 0,
                                        # None for data of unknown length, as in Keras
                                        "steps": trainer.expected_steps_per_epoch})
        self.model.stop_training = False
        with _eager():
            self.keras_callback.on_train_begin({})

    def _before_epoch(self):
        self._epoch_start = self.global_step
        with _eager():
            self.keras_callback.on_epoch_begin(self.epoch_num - 1, {})
        self._stop_if_asked("at the beginning of epoch")

    def _before_run(self, ctx):
        with _eager():
            self.keras_callback.on_train_batch_begin(self.local_step, {})
        return [self._cost] if self._cost is not None else None

    def _after_run(self, ctx, values):
        logs = {"loss": float(values.results[0])} if self._cost is not None else {}
        with _eager():
            self.keras_callback.on_train_batch_end(self.local_step, logs)
        if self.model.stop_training:
            if self._cost is not None and not math.isfinite(logs["loss"]):
                self._fail_on_non_finite_loss(self._cost.name, logs["loss"])
            self._pending_epoch = self.epoch_num
            ctx.request_stop()

    def _fail_on_non_finite_loss(self, name, loss):
        """A stop after a step whose loss is NaN or Inf: the weights diverged with it, so
        training fails, as with tfloop's ``TerminateOnNaN`` (no final checkpoint of them)."""
        raise NaNLossError(f"{self} set model.stop_training after global step {self.global_step} "
                           f"(epoch {self.epoch_num}), whose loss {name} is {loss}: training "
                           "failed. Lower the learning rate, check the input data or clip the "
                           "gradients.", [name], self.global_step)

    def _trigger_epoch(self):
        self._pending_epoch = self.epoch_num

    def _epoch_round_over(self):
        """The trainer's epoch-end listener: Keras' ``on_epoch_end`` of the epoch just triggered;
        a stop it asks for is requested from the trainer, so that every Keras callback's
        ``on_epoch_end`` still runs, as in ``fit``."""
        self._end_pending_epoch()
        if self.model.stop_training:
            self.trainer.request_stop(f"{self} set model.stop_training at the end of epoch "
                                      f"{self.epoch_num}.")

    def _after_train(self):
        if self.trainer.training_error is None:
            self._end_pending_epoch()
        with _eager():
            self.keras_callback.on_train_end(dict(self._last_logs))

    # ---- epoch ends ------------------------------------------------------------------------------
    def epoch_logs(self) -> dict:
        """The latest value of every scalar put since the current epoch began."""
        monitors, logs = self.trainer.monitors, {}
        for name in monitors.scalar_names():
            step, value = monitors.get_history(name)[-1]
            if step > self._epoch_start:
                logs[name] = value
        return logs

    def _end_pending_epoch(self):
        epoch, self._pending_epoch = self._pending_epoch, None
        if epoch is None:
            return
        logs = self.epoch_logs()
        with _eager():
            self.keras_callback.on_epoch_end(epoch - 1, logs)
        self._last_logs = logs

    def _stop_if_asked(self, when):
        if self.model.stop_training:
            raise StopTraining(f"{self} set model.stop_training {when} {self.epoch_num}.")

    def __str__(self):
        return f"KerasCallback({type(self.keras_callback).__name__})"
