"""StatMonitorParamSetter (a scripted stat), asserted epoch by epoch on the learning rate variable
the optimizer really uses; tensorpack's argument names and the family's (monitor_stat, mode,
min_delta) give the same run."""
import json

import pytest
from support import train_recording_lr

import tfloop
from tfloop.compat import tfv1


class PutStat(tfloop.Callback):
    """Puts ``values[epoch]`` (when there is one) to the monitors after that epoch."""

    def __init__(self, name, values):
        self.name = name
        self.values = values

    def _trigger(self):
        if self.epoch_num in self.values:
            self.trainer.monitors.put_scalar(self.name, self.values[self.epoch_num])


def by_epoch(values, first=1):
    return {first + i: v for i, v in enumerate(values)}


def test_stat_monitor_halves_when_no_improvement_in_last_k_then_waits():
    stat = PutStat("val-error", by_epoch([1.0, 0.9, 0.9, 0.9, 0.9, 0.5, 0.5, 0.5, 0.5]))
    setter = tfloop.StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.5,
                                           threshold=0, last_k=3)
    lrs, puts = train_recording_lr([stat, setter], max_epoch=9)
    assert lrs == [0.1] * 4 + [0.05] * 4 + [0.025]
    assert puts == [(0, 0.1), (3, 0.1), (6, 0.1), (9, 0.1), (12, 0.05), (15, 0.05), (18, 0.05),
                    (21, 0.05), (24, 0.025)]
    assert setter.last_change_step == 24
    assert list(setter.history) == [(27, 0.5)]
    assert setter.best == 0.5


@pytest.mark.parametrize("values,threshold,last_k,reverse,expected", [
    ([1.0, 0.95, 0.92, 0.5], 0.1, 3, False, [0.1, 0.1, 0.1, 0.05]),
    ([1.0, 0.95, 0.85, 0.5], 0.1, 3, False, [0.1, 0.1, 0.1, 0.1]),
    ([0.5, 0.6, 0.6, 0.6], 0.0, 2, True, [0.1, 0.1, 0.1, 0.05]),
    ([0.5, float("nan"), float("nan"), 0.6], 0.0, 2, False, [0.1, 0.1, 0.05, 0.05]),
])
def test_stat_monitor_threshold_reverse_and_nan(values, threshold, last_k, reverse, expected):
    setter = tfloop.StatMonitorParamSetter("learning_rate", "score", lambda lr: lr * 0.5,
                                           threshold=threshold, last_k=last_k, reverse=reverse)
    lrs, _ = train_recording_lr([PutStat("score", by_epoch(values)), setter], max_epoch=len(values))
    assert lrs == expected


def test_stat_monitor_state_round_trips_through_a_resume(log_warnings):
    values = [1.0, 0.9, 0.9, 0.9]
    first = tfloop.StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.5,
                                          threshold=0, last_k=3)
    train_recording_lr([PutStat("val-error", by_epoch(values[:2])), first], max_epoch=2)
    state = json.loads(json.dumps(first.state_dict()))
    assert state == {"last_value": None, "best": 0.9, "best_step": 6,
                     "last_seen_step": 6,
                     "history": [[3, 1.0], [6, 0.9]], "last_change_step": None}

    class ResumeAtStep6(tfloop.SessionInit):
        def _setup_graph(self):
            self.op = tfv1.assign(tfloop.get_global_step_var(), 6)

        def _run_init(self, sess):
            sess.run(self.op)

    resumed = tfloop.StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.5,
                                            threshold=0, last_k=3)
    resumed.load_state_dict(state)
    lrs, puts = train_recording_lr([PutStat("val-error", by_epoch(values[2:], first=3)), resumed],
                    max_epoch=4, starting_epoch=3, session_init=ResumeAtStep6())
    assert puts == [(6, 0.1), (9, 0.1)]  # 0.05, set when the last epoch ended, trains no epoch
    assert resumed.state_dict() == {"last_value": pytest.approx(0.05), "best": 0.9, "best_step": 6,
                                    "history": [], "last_seen_step": 12, "last_change_step": 12}
    assert log_warnings == []


def test_stat_monitor_missing_or_stale_stat_warns_once(log_warnings):
    setter = tfloop.StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.5,
                                           threshold=0, last_k=2)
    lrs, _ = train_recording_lr([setter], max_epoch=2)
    assert lrs == [0.1, 0.1]
    assert len(log_warnings) == 1 and "No scalar named 'val-error'" in log_warnings[0]
    del log_warnings[:]
    stale = tfloop.StatMonitorParamSetter("learning_rate", "val-error", lambda lr: lr * 0.5,
                                          threshold=0, last_k=2)
    lrs, _ = train_recording_lr([PutStat("val-error", {1: 1.0, 3: 1.0}), stale], max_epoch=5)
    # epochs 2 and 4 add nothing: the window is (3, 1.0), (9, 1.0) -> change after epoch 3
    assert lrs == [0.1, 0.1, 0.1, 0.05, 0.05]
    assert stale.last_change_step == 9 and list(stale.history) == []
    assert len(log_warnings) == 1 and "without a new value of 'val-error'" in log_warnings[0]


@pytest.mark.parametrize("kwargs,error,fragment", [
    (dict(last_k=1), ValueError, "last_k must be an int >= 2"),
    (dict(threshold=-0.1), ValueError, "threshold must be a number >= 0, got -0.1"),
    (dict(value_func=0.5), TypeError, "value_func must be callable"),
])
def test_stat_monitor_bad_arguments(kwargs, error, fragment):
    args = dict(param="learning_rate", stat_name="val-error", value_func=lambda lr: lr,
                threshold=0, last_k=3)
    args.update(kwargs)
    with pytest.raises(error, match=fragment):
        tfloop.StatMonitorParamSetter(**args)


def test_the_family_names_give_the_same_run_as_tensorpack_names():
    values = by_epoch([0.5, 0.6, 0.58, 0.9, 0.9])
    tensorpack_names = tfloop.StatMonitorParamSetter("learning_rate", "score", lambda lr: lr * 0.5,
                                                     0.05, 2, True)
    family_names = tfloop.StatMonitorParamSetter("learning_rate", monitor_stat="score",
                                                 value_func=lambda lr: lr * 0.5, min_delta=0.05,
                                                 last_k=2, mode="max")
    runs = [train_recording_lr([PutStat("score", values), setter], max_epoch=5)
            for setter in (tensorpack_names, family_names)]
    # windows (0.5, 0.6): better by 0.1; (0.6, 0.58): no -> halve; (0.9, 0.9): no -> halve
    assert runs[0] == runs[1]
    assert runs[0][0] == [0.1, 0.1, 0.1, 0.05, 0.05]
    for setter in (tensorpack_names, family_names):
        assert (setter.stat_name, setter.monitor_stat, setter.threshold, setter.min_delta,
                setter.reverse, setter.mode) == ("score", "score", 0.05, 0.05, True, "max")
        assert (setter.best, setter.best_step, setter.last_change_step) == (0.9, 12, 15)


def test_threshold_defaults_to_zero_when_neither_name_is_given():
    setter = tfloop.StatMonitorParamSetter("learning_rate", "val", lambda lr: lr, last_k=2)
    assert (setter.threshold, setter.mode) == (0.0, "min")


@pytest.mark.parametrize("kwargs, names", [
    ({"stat_name": "a", "monitor_stat": "b"}, ("stat_name='a'", "monitor_stat='b'")),
    ({"threshold": 0.1, "min_delta": 0.1}, ("threshold=0.1", "min_delta=0.1")),
    ({"reverse": False, "mode": "min"}, ("reverse=False", "mode='min'")),
])
def test_an_alias_and_its_new_name_together_are_a_type_error_naming_both(kwargs, names):
    args = dict(param="learning_rate", stat_name="val", value_func=lambda lr: lr, last_k=3)
    args.update(kwargs)
    with pytest.raises(TypeError) as info:
        tfloop.StatMonitorParamSetter(**args)
    assert all(name in str(info.value) for name in names)


def test_reverse_must_be_a_bool():
    with pytest.raises(TypeError, match=r"reverse must be True or False \(True: larger is "
                                        r"better\), got 'max'"):
        tfloop.StatMonitorParamSetter("learning_rate", "val", lambda lr: lr, 0, 3, "max")
