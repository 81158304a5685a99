"""EarlyStopping: the exact epoch it stops at for scripted stat sequences, in either list order."""
import json

import pytest
from support import RecordingCallback, train_linear

import tfloop


class ScriptedStat(tfloop.Callback):
    """Puts ``values[i]`` as ``val`` at the i-th trigger."""

    def __init__(self, values):
        self.values = list(values)

    def _trigger(self):
        self.trainer.monitors.put_scalar("val", self.values.pop(0))


def run(early_stopping, values, stat_first=True, max_epoch=8):
    """Train with a scripted stat; returns the trainer and the epochs whose steps all ran."""
    log = []
    stat = ScriptedStat(values)
    cbs = [stat, early_stopping] if stat_first else [early_stopping, stat]
    trainer = train_linear([RecordingCallback("r", log)] + cbs, max_epoch=max_epoch)
    return trainer, [e[2] for e in log if e[1] == "after_epoch"]


@pytest.mark.parametrize("stat_first", [True, False], ids=["stat-first", "stopper-first"])
def test_stops_when_patience_is_exceeded(stat_first, log_lines):
    values = [0.5, 0.4, 0.45, 0.41, 0.42, 0.1, 0.1, 0.1]
    trainer, epochs = run(tfloop.EarlyStopping("val", patience=2), values, stat_first)
    assert epochs == [1, 2, 3, 4, 5]               # the 5th value is the 3rd without improvement
    assert trainer.global_step == 15               # no step after the value that stopped it
    message = [line for line in log_lines if line.startswith("Training stopped")][0]
    assert "'val'" in message and "best 0.4 (global step 6)" in message
    assert "patience=2" in message and "0.42 at global step 15" in message


def test_patience_zero_stops_at_the_first_value_without_improvement():
    _, epochs = run(tfloop.EarlyStopping("val"), [0.5, 0.4, 0.3, 0.3, 0.2])
    assert epochs == [1, 2, 3, 4]                  # an equal value is not an improvement


def test_improvement_resets_the_count():
    values = [0.5, 0.6, 0.4, 0.7, 0.3, 0.8, 0.9, 0.1]
    _, epochs = run(tfloop.EarlyStopping("val", patience=1), values)
    assert epochs == [1, 2, 3, 4, 5, 6, 7]


def test_min_delta():
    _, epochs = run(tfloop.EarlyStopping("val", patience=1, min_delta=0.1), [1.0, 0.95, 0.92, 0.5])
    assert epochs == [1, 2, 3]


def test_mode_max():
    _, epochs = run(tfloop.EarlyStopping("val", mode="max", patience=1), [0.1, 0.5, 0.4, 0.3, 0.9])
    assert epochs == [1, 2, 3, 4]


class EveryOtherEpoch(tfloop.Callback):
    def __init__(self, values):
        self.values = list(values)

    def _trigger(self):
        if self.epoch_num % 2 == 0:
            self.trainer.monitors.put_scalar("val", self.values.pop(0))


def test_a_value_not_put_again_counts_once():
    log = []
    train_linear([EveryOtherEpoch([0.5, 0.6, 0.7, 0.8]), tfloop.EarlyStopping("val", patience=1),
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
