"""EarlyStopping: the exact epoch it stops at for scripted stat sequences, in either list order."""
import json
import os

import numpy as np
import pytest
from keras_support import keras_fit_with_values
from resume_support import WeightLog, make_dataset
from support import LinearModel, LRModel, RecordingCallback, train_linear

import tfloop
from tfloop.callbacks.early_stop import model_weights
from tfloop.compat import tf
from tfloop.resume.state import read_resume_state


class ScriptedStat(tfloop.Callback):
    """Puts ``values[i]`` as ``val`` at the i-th trigger."""

    def __init__(self, values):
        self.values = list(values)

    def _trigger(self):
        self.trainer.monitors.put_scalar("val", self.values.pop(0))


def run(early_stopping, values, stat_first=True, max_epoch=8, begun=None):
    """Train with a scripted stat; returns the trainer and the epochs whose steps all ran
    (``begun``: a list that gets the epochs a callback listed first began)."""
    log = []
    stat = ScriptedStat(values)
    cbs = [stat, early_stopping] if stat_first else [early_stopping, stat]
    trainer = train_linear([RecordingCallback("r", log)] + cbs, max_epoch=max_epoch)
    if begun is not None:
        begun.extend(e[2] for e in log if e[1] == "before_epoch")
    return trainer, [e[2] for e in log if e[1] == "after_epoch"]


@pytest.mark.parametrize("stat_first", [True, False], ids=["stat-first", "stopper-first"])
def test_stops_when_patience_is_reached(stat_first, log_lines):
    values = [0.5, 0.4, 0.45, 0.41, 0.42, 0.1, 0.1, 0.1]
    begun = []
    trainer, epochs = run(tfloop.EarlyStopping("val", patience=2), values, stat_first,
                          begun=begun)
    assert epochs == [1, 2, 3, 4]                  # the 4th value is the 2nd without improvement
    assert trainer.global_step == 12               # no step after the value that stopped it
    assert begun == [1, 2, 3, 4] and trainer.epoch_num == 4     # no callback began a 5th
    message = [line for line in log_lines if line.startswith("Training stopped")][0]
    assert "'val'" in message and "best 0.4 (global step 6)" in message
    assert "patience=2" in message and "0.41 at global step 12" in message


def test_patience_zero_stops_at_the_first_value_without_improvement():
    _, epochs = run(tfloop.EarlyStopping("val"), [0.5, 0.4, 0.3, 0.3, 0.2])
    assert epochs == [1, 2, 3, 4]                  # an equal value is not an improvement


def test_improvement_resets_the_count():
    values = [0.5, 0.6, 0.4, 0.7, 0.3, 0.8, 0.9, 0.1]
    _, epochs = run(tfloop.EarlyStopping("val", patience=2), values)
    assert epochs == [1, 2, 3, 4, 5, 6, 7]


def test_min_delta():
    _, epochs = run(tfloop.EarlyStopping("val", patience=2, min_delta=0.1), [1.0, 0.95, 0.92, 0.5])
    assert epochs == [1, 2, 3]


def test_mode_max():
    _, epochs = run(tfloop.EarlyStopping("val", mode="max", patience=2), [0.1, 0.5, 0.4, 0.3, 0.9])
    assert epochs == [1, 2, 3, 4]


class EveryOtherEpoch(tfloop.Callback):
    def __init__(self, values):
        self.values = list(values)

    def _trigger(self):
        if self.epoch_num % 2 == 0:
            self.trainer.monitors.put_scalar("val", self.values.pop(0))


def test_a_value_not_put_again_counts_once():
    log = []
    train_linear([EveryOtherEpoch([0.5, 0.6, 0.7, 0.8]), tfloop.EarlyStopping("val", patience=2),
                  RecordingCallback("r", log)], max_epoch=8)
    assert [e[2] for e in log if e[1] == "after_epoch"] == [1, 2, 3, 4, 5, 6]


def test_a_missing_stat_warns_once_and_never_stops(log_lines):
    _, epochs = run(tfloop.EarlyStopping("nothing"), [1.0] * 4, max_epoch=4)
    assert epochs == [1, 2, 3, 4]
    warnings = [line for line in log_lines if "No scalar named 'nothing'" in line]
    assert len(warnings) == 1 and "EarlyStopping('nothing')" in warnings[0]


def test_state_round_trips_into_a_fresh_instance():
    stopper = tfloop.EarlyStopping("val", patience=3)
    run(stopper, [0.5, 0.4, 0.6, 0.7], max_epoch=4)
    state = json.loads(json.dumps(stopper.state_dict()))
    assert state == {"best": 0.4, "best_step": 6, "last_seen_step": 12, "wait": 2}
    fresh = tfloop.EarlyStopping("val", patience=3)
    fresh.load_state_dict(state)
    assert (fresh.best, fresh.best_step, fresh.wait, fresh.last_seen_step) == (0.4, 6, 2, 12)


@pytest.mark.parametrize("kwargs, match", [({"mode": "up"}, "mode"), ({"patience": -1}, "patience"),
                                           ({"patience": 1.5}, "patience"),
                                           ({"min_delta": -0.1}, "min_delta")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        tfloop.EarlyStopping("val", **kwargs)


class PutValError(tfloop.Callback):
    def _trigger(self):
        self.trainer.monitors.put_scalar("val-error", 0.5)


@pytest.mark.parametrize("make", [lambda stat: tfloop.EarlyStopping(stat),
                                  lambda stat: tfloop.MinSaver(stat, checkpoint_dir=".")])
@pytest.mark.parametrize("first", [True, False], ids=["stat-first", "watcher-first"])
def test_a_misspelled_stat_is_an_error_naming_the_close_match(tmp_path, monkeypatch, make, first):
    monkeypatch.chdir(tmp_path)
    watcher, putter = make("val_error"), PutValError()
    log = []
    with pytest.raises(ValueError, match=r"no stat named 'val_error' was put in the epochs so far, "
                                         r"but this was: 'val-error': a misspelling\?"):
        train_linear([RecordingCallback("r", log)] + ([putter, watcher] if first
                                                      else [watcher, putter]), max_epoch=5)
    assert [e[2] for e in log if e[1] == "after_epoch"] == [1]


def test_a_stat_put_only_later_with_no_close_name_is_not_an_error(log_warnings):
    class PutLater(tfloop.Callback):
        def _trigger(self):
            self.trainer.monitors.put_scalar("other", 1.0)
            if self.epoch_num == 3:
                self.trainer.monitors.put_scalar("val-error", 0.5)
    stopper = tfloop.EarlyStopping("val-error")
    train_linear([PutLater(), stopper], max_epoch=4)
    assert stopper.best == 0.5


KERAS_CASES = [
    ([0.5, 0.4, 0.45, 0.41, 0.42, 0.1, 0.1, 0.1], {"patience": 2}),
    ([0.5, 0.4, 0.3, 0.3, 0.2, 0.1], {"patience": 0}),
    ([0.5, 0.6, 0.4, 0.7, 0.3, 0.8, 0.9, 0.1], {"patience": 1}),
    ([0.5, 0.6, 0.4, 0.7, 0.3, 0.8, 0.9, 0.1], {"patience": 3}),
    ([1.0, 0.95, 0.92, 0.5, 0.4, 0.3], {"patience": 2, "min_delta": 0.1}),
    ([0.1, 0.5, 0.4, 0.3, 0.9, 0.2], {"patience": 2, "mode": "max"}),
    ([0.9, 0.8, 0.7, 0.75, 0.6, 0.55, 0.5, 0.4], {"patience": 2, "baseline": 0.5}),
    ([0.9, 0.4, 0.45, 0.46, 0.3, 0.2, 0.1, 0.1], {"patience": 2, "baseline": 0.5}),
]


@pytest.mark.parametrize("values, kwargs", KERAS_CASES)
def test_stops_at_the_epoch_keras_fit_stops_at(values, kwargs):
    import keras
    kwargs = {"mode": "min", **kwargs}
    _, keras_epochs = keras_fit_with_values([keras.callbacks.EarlyStopping("val", **kwargs)],
                                            values)
    _, epochs = run(tfloop.EarlyStopping("val", **kwargs), values, max_epoch=len(values))
    assert epochs == list(range(1, keras_epochs + 1))


class Weights(tfloop.Callback):
    """The model's weight ``w`` at every trigger (``per_epoch``) and in ``after_train``."""

    def __init__(self):
        self.per_epoch, self.final = [], None

    def _setup_graph(self):
        self.w = self.get_tensors_maybe_in_tower(["w"])[0]

    def _trigger(self):
        self.per_epoch.append(self.trainer.sess.run(self.w).copy())

    def _after_train(self):
        self.final = self.trainer.sess.run(self.w)


@pytest.mark.parametrize("restore", [True, False])
def test_restore_best_weights_loads_the_weights_of_the_best_epoch(restore, log_lines):
    before, after = Weights(), Weights()
    stopper = tfloop.EarlyStopping("val", patience=2, restore_best_weights=restore)
    train_linear([before, ScriptedStat([0.5, 0.3, 0.4, 0.6, 0.1]), stopper, after], max_epoch=5)
    assert len(before.per_epoch) == 4               # stopped at the 4th value
    assert not np.array_equal(before.per_epoch[1], before.per_epoch[3])
    np.testing.assert_array_equal(before.final, before.per_epoch[3])
    np.testing.assert_array_equal(after.final, before.per_epoch[1 if restore else 3])
    restored = [line for line in log_lines if "restored the weights from global step 6" in line]
    assert len(restored) == (1 if restore else 0)


def test_model_weights_are_those_keras_get_weights_would_hold():
    trainer = train_linear([], max_epoch=1, model=LRModel())     # has a learning_rate variable
    assert [v.op.name for v in model_weights(trainer.graph)] == ["w"]


@pytest.mark.parametrize("kwargs, match", [({"baseline": "low"}, "baseline"),
                                           ({"restore_best_weights": 1}, "restore_best_weights")])
def test_bad_keras_arguments(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        tfloop.EarlyStopping("val", **kwargs)


def _train_restoring_the_best(logdir, values, patience):
    """Train with EarlyStopping(restore_best_weights=True) listed before a ModelSaver of every
    epoch, resumably; returns the trainer, the stopper and ``{global step: w after it}``."""
    weights = WeightLog()
    stopper = tfloop.EarlyStopping("val", patience=patience, restore_best_weights=True)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(make_dataset), monitors=[],
        callbacks=[ScriptedStat(values), stopper, tfloop.ModelSaver(max_to_keep=None), weights],
        extra_callbacks=[], max_epoch=len(values))
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer, stopper, {step: np.frombuffer(w, np.float32) for step, w in weights.after_step}


def _w_of(prefix):
    return tf.train.load_variable(prefix, "w").ravel()


@pytest.mark.parametrize("patience, last_step", [(9, 12), (2, 12)], ids=["max-epoch", "stopped"])
def test_restoring_the_best_weights_leaves_each_checkpoint_the_weights_of_its_step(
        logdir, patience, last_step):
    # The best value is the 2nd (global step 6); patience 2 stops at the 4th value (step 12),
    # patience 9 trains all 4 epochs. Either way the last checkpoint is step 12's, with step
    # 12's weights and resume state; the weights training ends with are step 6's, and so are
    # those of the checkpoint the stopper names.
    trainer, stopper, w_after = _train_restoring_the_best(logdir, [0.5, 0.3, 0.4, 0.45], patience)
    assert trainer.global_step == last_step and stopper.best_step == 6
    latest = tf.train.latest_checkpoint(logdir)
    assert latest == os.path.join(logdir, f"model-{last_step}")
    np.testing.assert_array_equal(_w_of(latest), w_after[last_step])
    state = read_resume_state(latest)
    assert (state["global_step"], state["epoch"], state["local_step"]) == (last_step, 5, 0)
    np.testing.assert_array_equal(trainer.final_weights["w"].ravel(), w_after[6])
    assert stopper.best_checkpoint == os.path.join(logdir, "model-6")
    np.testing.assert_array_equal(_w_of(stopper.best_checkpoint), w_after[6])
    assert not np.array_equal(w_after[6], w_after[last_step])


def test_the_restored_weights_name_no_checkpoint_when_none_holds_them(log_lines):
    stopper = tfloop.EarlyStopping("val", patience=2, restore_best_weights=True)
    train_linear([ScriptedStat([0.5, 0.3, 0.4, 0.45]), stopper], max_epoch=4)
    assert stopper.best_checkpoint is None
    assert any("no checkpoint of this run holds them (MinSaver('val') keeps the best one)" in line
               for line in log_lines)
