"""Keras' own callbacks in a tfloop training behave as in Keras ``fit`` (the reference) given the
same monitored values: where they stop, the learning rate the train op uses, the CSV they write."""
import csv

import keras
import numpy as np
import pytest
from keras_support import keras_fit_with_logs, keras_fit_with_values
from support import LRModel, LRRecorder, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf
from tfloop.utils.logdir_format import read_run_status

DATA = [(np.zeros((1, 3), np.float32), np.zeros((1,), np.float32))]


class ScriptedStat(tfloop.Callback):
    """Puts ``values[i]`` as ``name`` at the i-th trigger."""

    def __init__(self, values, name="val"):
        self.values, self.name = list(values), name

    def _trigger(self):
        self.trainer.monitors.put_scalar(self.name, self.values.pop(0))


class KerasLR(keras.callbacks.Callback):
    """The optimizer's learning rate at each epoch's beginning, after the callbacks before it."""

    def __init__(self):
        super().__init__()
        self.lrs = []

    def on_epoch_begin(self, epoch, logs=None):
        self.lrs.append(round(float(self.model.optimizer.learning_rate), 6))


def train_lr(keras_callbacks, values, before=()):
    """Train LRModel for ``len(values)`` epochs with ``val`` scripted; returns the trainer and
    the learning rate each epoch trained with (fetched along with its steps)."""
    recorder = LRRecorder()
    trainer = train_linear(list(before) + [ScriptedStat(values)] + list(keras_callbacks)
                           + [recorder], model=LRModel(0.1), max_epoch=len(values))
    return trainer, recorder.per_epoch()


@pytest.mark.parametrize("kwargs", [{"patience": 2}, {"patience": 1, "min_delta": 0.05},
                                    {"patience": 2, "baseline": 0.42}])
def test_keras_early_stopping_stops_at_the_epoch_fit_stops_at(kwargs):
    values = [0.5, 0.4, 0.45, 0.41, 0.42, 0.3, 0.2, 0.1]
    _, keras_epochs = keras_fit_with_values(
        [keras.callbacks.EarlyStopping("val", mode="min", **kwargs)], values)
    trainer, lrs = train_lr([keras.callbacks.EarlyStopping("val", mode="min", **kwargs)], values)
    assert len(lrs) == keras_epochs < len(values)
    assert trainer.global_step == 3 * keras_epochs


class EpochHooks(keras.callbacks.Callback):
    """The epoch hooks Keras called, in order."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("begin", epoch))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("end", epoch, dict(logs)))

    def on_train_end(self, logs=None):
        self.calls.append(("train_end",))


@pytest.mark.parametrize("stat_first", [True, False], ids=["stat-first", "stat-last"])
def test_keras_early_stopping_given_to_train_config_ends_training_where_fit_does(
        logdir, stat_first):
    values = [0.5, 0.4, 0.45, 0.41, 0.42, 0.3]
    before, after = EpochHooks(), EpochHooks()
    stopper = keras.callbacks.EarlyStopping("val", mode="min", patience=2)
    _, keras_epochs = keras_fit_with_values([before, stopper, after], values)
    expected = before.calls
    assert after.calls == expected and keras_epochs == 4
    before, after = EpochHooks(), EpochHooks()
    stopper = keras.callbacks.EarlyStopping("val", mode="min", patience=2)
    stat = [ScriptedStat(values)]
    trainer = train_linear((stat if stat_first else []) + [before, stopper, after] +
                           ([] if stat_first else stat), model=LRModel(0.1),
                           max_epoch=len(values))
    # No callback begins a 5th epoch; every one ends the 4th; the run ends in epoch 4.
    assert before.calls == expected and after.calls == expected
    assert (trainer.global_step, trainer.epoch_num) == (3 * keras_epochs, keras_epochs)
    assert read_run_status(logdir).record["epoch_num"] == keras_epochs
    assert trainer.stop_reason == ("KerasCallback(EarlyStopping) set model.stop_training at the "
                                   "end of epoch 4.")


def test_keras_early_stopping_restores_the_best_weights_through_the_session():
    weights = []

    class W(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            weights.append(self.model.get_weights()[0].copy())

        def on_train_end(self, logs=None):
            weights.append(self.model.get_weights()[0].copy())

    stopper = keras.callbacks.EarlyStopping("val", mode="min", patience=2,
                                            restore_best_weights=True)
    train_lr([W(), stopper, W()], [0.5, 0.3, 0.4, 0.6, 0.1])
    # W before the stopper: epochs 1-4 then the end; W after it: the same, after the restore.
    per_epoch, final = weights[0:8:2], weights[-1]
    assert len(per_epoch) == 4
    np.testing.assert_array_equal(final, per_epoch[1])
    assert not np.array_equal(per_epoch[1], per_epoch[3])


@pytest.mark.slow
@pytest.mark.parametrize("make", [
    lambda: keras.callbacks.ReduceLROnPlateau("val", mode="min", factor=0.5, patience=1),
    lambda: keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5 if epoch else lr),
    lambda: keras.callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1)),
], ids=["ReduceLROnPlateau", "LearningRateScheduler(epoch, lr)", "LearningRateScheduler(epoch)"])
def test_learning_rate_callbacks_change_the_rate_the_train_op_uses_as_in_fit(make):
    values = [0.5, 0.6, 0.7, 0.4, 0.45, 0.46]
    reference = KerasLR()
    keras_fit_with_values([make(), reference], values, lr=0.1)
    _, lrs = train_lr([make()], values)
    assert lrs == reference.lrs
    assert len(set(lrs)) > 1


def test_the_learning_rate_a_keras_callback_sets_is_put_to_the_monitors():
    scheduler = keras.callbacks.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))
    trainer, _ = train_lr([scheduler], [1.0, 1.0, 1.0])
    history = trainer.monitors.get_history("learning_rate")
    assert [round(v, 6) for _, v in history] == [0.1, 0.05, 0.033333]
    assert [step for step, _ in history] == [0, 3, 6]


class LogsRecorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.logs = []

    def on_epoch_end(self, epoch, logs=None):
        self.logs.append(dict(logs))


def test_csv_logger_writes_the_file_fit_writes_for_the_same_logs(tmp_path):
    logs = LogsRecorder()
    train_lr([logs, keras.callbacks.CSVLogger(str(tmp_path / "tfloop.csv"))],
             [0.5, 0.4, 0.3], before=[ScriptedStat([0.9, 0.8, 0.7], "acc")])
    assert [sorted(epoch) for epoch in logs.logs] == [["acc", "val"]] * 3
    keras_fit_with_logs([keras.callbacks.CSVLogger(str(tmp_path / "keras.csv"))], logs.logs)
    ours = (tmp_path / "tfloop.csv").read_text()
    assert ours == (tmp_path / "keras.csv").read_text()
    rows = list(csv.DictReader(ours.splitlines()))
    assert [row["epoch"] for row in rows] == ["0", "1", "2"]
    assert [float(row["val"]) for row in rows] == [0.5, 0.4, 0.3]


def test_epoch_logs_hold_what_an_inference_runner_listed_after_puts():
    logs = LogsRecorder()
    train_lr([logs], [0.5, 0.4])                     # ScriptedStat is listed before
    before = [epoch["val"] for epoch in logs.logs]
    logs_first = LogsRecorder()
    train_lr([], [0.5, 0.4], before=[logs_first])    # ... and here after
    assert before == [epoch["val"] for epoch in logs_first.logs] == [0.5, 0.4]


class Hooks(keras.callbacks.Callback):
    """Records the epoch and train hooks."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin",))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch, logs.get("val")))

    def on_train_end(self, logs=None):
        self.calls.append(("train_end", logs.get("val")))


class BatchHooks(Hooks):
    """Records the batch hooks too, and sets ``stop_training`` at the ``stop_at``-th batch."""

    stop_at = None

    def on_train_batch_begin(self, batch, logs=None):
        self.calls.append(("batch_begin", batch))

    def on_train_batch_end(self, batch, logs=None):
        self.calls.append(("batch_end", batch, round(logs["loss"], 5)))
        if self.stop_at == len([c for c in self.calls if c[0] == "batch_end"]):
            self.model.stop_training = True


def test_a_custom_callback_gets_every_hook_in_fits_order_with_the_steps_cost():
    costs = []

    class Costs(tfloop.Callback):
        def _setup_graph(self):
            self.cost = self.get_tensors_maybe_in_tower(["cost"])[0]

        def _before_run(self, ctx):
            return [self.cost]

        def _after_run(self, ctx, values):
            costs.append(round(float(values.results[0]), 5))

    hooks = BatchHooks()
    train_lr([hooks, Costs()], [0.5, 0.4])
    batches = [("batch_begin", 0), ("batch_end", 0), ("batch_begin", 1), ("batch_end", 1),
               ("batch_begin", 2), ("batch_end", 2)]
    expected = [("train_begin",)]
    for epoch, val in enumerate([0.5, 0.4]):
        expected += [("epoch_begin", epoch)] + batches + [("epoch_end", epoch, val)]
    expected.append(("train_end", 0.4))
    assert [c[:2] for c in hooks.calls] == [c[:2] for c in expected]
    assert [c[2] for c in hooks.calls if c[0] == "batch_end"] == costs


def test_batch_hooks_cost_nothing_when_the_keras_callback_does_not_override_them():
    wrapped = tfloop.KerasCallback(Hooks())
    train_lr([wrapped], [0.5])
    assert not wrapped.uses_run_hooks()
    assert tfloop.KerasCallback(BatchHooks()).uses_run_hooks()


def test_stop_training_in_a_batch_hook_stops_after_that_step():
    hooks = BatchHooks()
    hooks.stop_at = 4
    trainer, _ = train_lr([hooks], [0.5, 0.4, 0.3])
    assert trainer.global_step == 4                  # the first step of the second epoch
    assert [c[:2] for c in hooks.calls[-5:]] == [
        ("epoch_begin", 1), ("batch_begin", 0), ("batch_end", 0), ("epoch_end", 1),
        ("train_end", None)]
    assert hooks.calls[-2][2] is None                # no stat was put in the unfinished epoch


def test_train_config_wraps_keras_callbacks():
    stopper = keras.callbacks.EarlyStopping("val")
    config = tfloop.TrainConfig(model=LRModel(), data=DATA, callbacks=[stopper],
                                extra_callbacks=keras.callbacks.CSVLogger("x.csv"))
    assert isinstance(config.callbacks[0], tfloop.KerasCallback)
    assert config.callbacks[0].keras_callback is stopper
    assert str(config.extra_callbacks[0]) == "KerasCallback(CSVLogger)"


@pytest.mark.parametrize("make, match", [
    (lambda: keras.callbacks.TensorBoard("logs"), "TFEventWriter"),
    (lambda: keras.callbacks.ModelCheckpoint("m.keras"), "ModelSaver"),
    (lambda: keras.callbacks.BackupAndRestore("b"), "AutoResumeTrainConfig"),
])
def test_keras_callbacks_needing_a_keras_model_are_refused_naming_tfloops_counterpart(make, match):
    with pytest.raises(TypeError, match=match):
        tfloop.TrainConfig(model=LRModel(), data=DATA, callbacks=[make()])


def test_a_learning_rate_callback_without_the_variable_is_an_error_at_setup():
    with pytest.raises(tfloop.tfutils.common.UnknownNameError, match="learning_rate"):
        train_linear([keras.callbacks.ReduceLROnPlateau("val")], max_epoch=1)


def test_what_the_model_lacks_is_named():
    class Summary(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.model.summary()

    with pytest.raises(AttributeError, match="asked for 'summary'"):
        train_linear([Summary()], max_epoch=1)


def test_only_keras_callbacks_are_wrapped():
    with pytest.raises(TypeError, match="KerasCallback needs a keras.callbacks.Callback"):
        tfloop.KerasCallback(tfloop.ModelSaver())


def test_history_and_lambda_callback_see_the_epochs_logs():
    history = keras.callbacks.History()
    ends = []
    train_lr([history, keras.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: ends.append((epoch, dict(logs))))], [0.5, 0.4])
    assert history.epoch == [0, 1] and history.history == {"val": [0.5, 0.4]}
    assert ends == [(0, {"val": 0.5}), (1, {"val": 0.4})]


@pytest.mark.parametrize("terminate", [lambda: keras.callbacks.TerminateOnNaN(),
                                       lambda: tfloop.TerminateOnNaN()],
                         ids=["keras", "tfloop"])
def test_terminate_on_nan_fails_and_keeps_the_last_good_checkpoint(logdir, terminate):
    # A NaN in the batch of step 5: its loss is NaN and so are the weights after it. Keras'
    # TerminateOnNaN through the adapter ends as tfloop's own does: failed, no checkpoint of
    # the diverged weights, so the latest one (what AutoResume would resume from) is step 3's.
    x, y = make_regression_data(24)
    x[17, 0] = np.nan
    with pytest.raises(tfloop.NaNLossError) as info:
        train_linear([terminate(), tfloop.ModelSaver()], data=tfloop.FeedInput(batches(x, y, 4)),
                     steps_per_epoch=3, max_epoch=3)
    assert info.value.global_step == 5 and info.value.names == ["cost:0"]
    assert "global step 5 (epoch 2)" in str(info.value) and "cost:0 is" in str(info.value)
    latest = tf.train.latest_checkpoint(logdir)
    assert latest.endswith("model-3")
    assert np.isfinite(tf.train.load_variable(latest, "w")).all()
    assert read_run_status(logdir).state == "failed"


def test_a_stop_from_a_batch_hook_after_a_finite_loss_is_a_clean_stop(logdir):
    class StopAtStep2(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 1:
                self.model.stop_training = True

    trainer = train_linear([StopAtStep2(), tfloop.ModelSaver()], max_epoch=3)
    assert trainer.global_step == 2 and trainer.training_error is None
    assert tf.train.latest_checkpoint(logdir).endswith("model-2")
    assert read_run_status(logdir).state == "stopped"
