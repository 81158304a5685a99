"""Stopping training when a monitored stat stops improving."""
from __future__ import annotations

from tfloop.callbacks.base import StopTraining
from tfloop.callbacks.model_saver import ModelSaver
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.compat import tfv1
from tfloop.tfutils.varmanip import is_optimizer_slot
from tfloop.utils import logger
from tfloop.utils.checks import check_bool, check_int, check_number

__all__ = ["EarlyStopping", "model_weights", "load_weights"]


def model_weights(graph) -> list:
    """The variables that make up a model's weights, as Keras' ``model.get_weights()`` has them:
    the trainable ones, ``MODEL_VARIABLES``, and the other non-scalar global variables (batch-norm
    statistics of Keras layers), but never the global step, an optimizer's slots, nor scalar
    non-trainable variables (counters and hyper-parameters such as the learning rate)."""
    keys = tfv1.GraphKeys
    chosen: dict = {}
    for var in graph.get_collection(keys.TRAINABLE_VARIABLES) + \
            graph.get_collection(keys.MODEL_VARIABLES):
        chosen.setdefault(var.op.name, var)
    step = tfv1.train.get_global_step(graph)
    for var in graph.get_collection(keys.GLOBAL_VARIABLES):
        if var is step or is_optimizer_slot(var.op.name) or var.shape.rank == 0:
            continue
        chosen.setdefault(var.op.name, var)
    return list(chosen.values())


def load_weights(sess, variables: list, values: list) -> None:
    """Load ``values`` into ``variables`` with one ``sess.run`` and no new op: each variable's
    initializer runs with its initial value fed (the graph may be finalized)."""
    if len(values) != len(variables):
        raise ValueError(f"Got {len(values)} arrays for the {len(variables)} weights of the model "
                         "(as get_weights() returns them).")
    initializers = [v.initializer for v in variables]
    sess.run(initializers, {op.inputs[1]: value for op, value in zip(initializers, values)})


class EarlyStopping(StatMonitorCallback):
    """Raise :class:`StopTraining` when a monitored stat has not improved for a while, counting as
    Keras' ``EarlyStopping`` does.

    Each new value of the stat adds one to :attr:`wait`; a value that improves on the best so far
    by more than ``min_delta`` (and beats ``baseline``, when given) sets it back to 0. A value that
    does not improve stops training once ``wait >= patience``, with a message naming the stat, its
    best value and the patience. So ``patience=2`` stops at the second value in a row without
    improvement (values 0.5, 0.4, 0.45, 0.41 stop training at the fourth, as in Keras ``fit``),
    and ``patience=0`` at the first.

    New values are looked for at each trigger (every epoch by default) and once the epoch's trigger
    round is over, so a value put later in the same round (by an ``InferenceRunner`` listed after
    this callback) stops training after that epoch, before any callback begins the next. A value
    that was not put again since the last check does not count twice.

    Where it differs from Keras: a NaN never improves (Keras takes a first NaN as the best);
    ``start_from_epoch`` and ``verbose`` do not exist (the stop is always logged); the weights kept
    for ``restore_best_weights`` are those when the value is seen, which for a value put by an
    epoch's ``InferenceRunner`` are the weights at the end of that epoch, as in Keras; a resumed
    run keeps the best value and ``wait`` but not the best weights (it restores only weights of a
    value that improves after the resume).

    Args:
        monitor_stat (str): the stat's name, e.g. ``"val-error"``.
        mode (str): ``"min"`` when smaller is better, ``"max"`` when larger is better.
        patience (int): values in a row without improvement that stop training (0 acts as 1).
        min_delta (float): an improvement must beat the best by more than this.
        baseline (float): a value must also beat this to set :attr:`wait` back to 0; None: no
            baseline.
        restore_best_weights (bool): at the end of training, load the weights (see
            :func:`model_weights`) that the model had when the best value was seen, as Keras does
            (also when training ends without this callback stopping it): they are the weights
            training ends with (``trainer.final_weights``, ``get_predictor`` after training,
            what the ``after_train`` of callbacks listed after this one see). The checkpoints
            are not changed: each ``model-N`` holds the weights of step N, the final one too
            (saved before any ``after_train``), so a resumed run continues the run as it went;
            :attr:`best_checkpoint` names the checkpoint holding the restored weights.

    Attributes:
        wait (int): values since the last one that reset the count.
        best (float), best_step (int): the best value and the global step it was put at.
        best_checkpoint (str): after training with ``restore_best_weights``, the prefix of a
            checkpoint of this run holding the restored weights (the one a ``ModelSaver`` saved
            at the step they were taken, while it keeps it), or None.

    Example:
        >>> callbacks = [InferenceRunner(data_val, [ScalarStats("cost", prefix="val")]),
        ...              EarlyStopping("val_cost", patience=3, restore_best_weights=True)]
    """

    def __init__(self, monitor_stat: str, mode: str = "min", patience: int = 0,
                 min_delta: float = 0.0, baseline: float | None = None,
                 restore_best_weights: bool = False) -> None:
        super().__init__(monitor_stat, mode=mode, min_delta=min_delta)
        self.patience = check_int(patience, "EarlyStopping: patience", at_least=0)
        if baseline is not None:
            baseline = float(check_number(baseline, "EarlyStopping: baseline"))
        self.baseline = baseline
        self.restore_best_weights = check_bool(restore_best_weights,
                                               "EarlyStopping: restore_best_weights")
        self.wait = 0
        self.best_weights: list | None = None
        self.best_checkpoint: str | None = None
        self._best_weights_step: int | None = None
        self._weights: list = []

    def _setup_graph(self):
        if self.restore_best_weights:
            self._weights = model_weights(self.graph)

    def _on_new_value(self, step, value, improved):
        self.wait += 1
        if improved:
            if self.restore_best_weights:
                self.best_weights = self.trainer.sess.run(self._weights)
                self._best_weights_step = self.global_step
            if self.baseline is None or self.is_improvement(value, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience:
            raise StopTraining(
                f"EarlyStopping: {self.monitor_stat!r} has not improved on its best {self.best} "
                f"(global step {self.best_step}) by more than min_delta={self.min_delta}"
                f"{self._baseline_words()} for {self.wait} value(s) in a row, reaching "
                f"patience={self.patience}; the latest is {value} at global step {step}.")

    def _baseline_words(self):
        return "" if self.baseline is None else f" nor beaten baseline={self.baseline}"

    def _after_train(self):
        if not self.restore_best_weights or self.best_weights is None:
            return
        load_weights(self.trainer.sess, self._weights, self.best_weights)
        self.best_checkpoint = self._checkpoint_at(self._best_weights_step)
        where = (f"checkpoint {self.best_checkpoint} holds them" if self.best_checkpoint else
                 f"no checkpoint of this run holds them (MinSaver({self.monitor_stat!r}) keeps "
                 "the best one)")
        logger.info(f"EarlyStopping: restored the weights from global step {self.best_step}, "
                    f"where {self.monitor_stat!r} was best ({self.best}): training ends with "
                    f"them (trainer.final_weights); {where}.")

    def _checkpoint_at(self, step):
        """A checkpoint a ModelSaver of this run saved at global step ``step`` and still keeps."""
        for saver in self.trainer.callbacks_of(ModelSaver):
            path = saver.checkpoint_at(step)
            if path is not None:
                return path
        return None

    def _state_dict(self):
        state = super()._state_dict()
        state["wait"] = self.wait
        return state

    def _load_state_dict(self, state):
        super()._load_state_dict(state)
        self.wait = state.get("wait", 0)
