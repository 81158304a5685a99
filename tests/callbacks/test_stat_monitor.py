"""StatMonitorCallback: the exact sequence of ``_on_new_value(step, value, improved)`` calls a
subclass gets on a real trainer, for either list order, mode and min_delta; aliases; its state."""
import json
import math

import pytest
from support import train_linear

import tfloop
from tfloop.compat import tfv1


class Watcher(tfloop.StatMonitorCallback):
    """Logs each call as (epoch, global step when called, step, value, improved, best, best_step);
    NaN is logged as the string "nan" so that logs compare with ==."""

    def __init__(self, log, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = log

    def _on_new_value(self, step, value, improved):
        value = "nan" if math.isnan(value) else value
        self.log.append((self.epoch_num, self.global_step, step, value, improved, self.best,
                         self.best_step))


class PutVal(tfloop.Callback):
    """Puts each of ``values[epoch]`` (a list) as ``val`` at the trigger of that epoch."""

    def __init__(self, values):
        self.values = values

    def _trigger(self):
        for value in self.values.get(self.epoch_num, []):
            self.trainer.monitors.put_scalar("val", value)


VALUES = {1: [0.5], 2: [0.4, 0.3], 3: [float("nan")], 4: [0.3], 5: [0.25]}


def watch(values=VALUES, watcher_first=False, max_epoch=5, **kwargs):
    log = []
    watcher, putter = Watcher(log, "val", **kwargs), PutVal(values)
    train_linear([watcher, putter] if watcher_first else [putter, watcher], max_epoch=max_epoch)
    return watcher, log


def test_each_new_value_once_in_order_with_improved_and_the_best_so_far():
    watcher, log = watch()
    assert log == [
        (1, 3, 3, 0.5, True, 0.5, 3),
        (2, 6, 6, 0.3, True, 0.3, 6),        # two values put at step 6: the latest counts, once
        (3, 9, 9, "nan", False, 0.3, 6),     # NaN never improves
        (4, 12, 12, 0.3, False, 0.3, 6),     # equal is not better
        (5, 15, 15, 0.25, True, 0.25, 15)]
    assert (watcher.best, watcher.best_step, watcher.last_seen_step) == (0.25, 15, 15)


def test_a_value_put_later_in_the_round_is_seen_at_the_end_of_that_epoch():
    # Once the epoch's trigger round is over (the trainer's epoch-end listeners), in the same
    # epoch and at the same global step as when the watcher is listed after the putter; the
    # last epoch's value too.
    _, log = watch(watcher_first=True)
    assert log == watch()[1]


@pytest.mark.parametrize("kwargs, values, improved", [
    ({"mode": "min", "min_delta": 0.1}, [1.0, 0.95, 0.85, 0.8, 0.9], [1, 0, 1, 0, 0]),
    ({"mode": "max"}, [0.9, 0.1, 0.5, 0.9, 0.2], [1, 0, 0, 0, 0]),
    ({"mode": "max", "min_delta": 0.05}, [0.1, 0.2, 0.22, 0.3, 0.5], [1, 1, 0, 1, 1]),
])
def test_mode_and_min_delta_decide_improved(kwargs, values, improved):
    watcher, log = watch({epoch: [v] for epoch, v in enumerate(values, 1)}, **kwargs)
    assert [entry[2] for entry in log] == [3, 6, 9, 12, 15]
    assert [entry[4] for entry in log] == [bool(i) for i in improved]
    last = max(i for i, better in enumerate(improved) if better)
    assert (watcher.best, watcher.best_step) == (values[last], 3 * (last + 1))


@pytest.mark.parametrize("mode, min_delta, best, value, reference, expected", [
    ("min", 0.0, None, 5.0, None, True),          # no reference yet: anything improves
    ("min", 0.0, None, None, None, False),        # no value
    ("min", 0.0, None, float("nan"), None, False),  # NaN never improves, even without a best
    ("min", 0.0, 1.0, 0.9, None, True),
    ("min", 0.0, 1.0, 1.0, None, False),          # equal is not better
    ("max", 0.0, 1.0, 1.1, None, True),
    ("max", 0.0, 1.0, 0.9, None, False),
    ("min", 0.1, 1.0, 0.95, None, False),         # better, but not by more than min_delta
    ("min", 0.1, 1.0, 0.85, None, True),
    ("max", 0.1, 1.0, 1.05, None, False),
    ("min", 0.0, 1.0, 0.9, 0.5, False),           # an explicit reference replaces the best
    ("max", 0.0, 1.0, 0.9, 0.5, True),
    ("min", 0.0, 1.0, float("nan"), 2.0, False),
])
def test_is_improvement_compares_with_the_best_or_a_reference(
        mode, min_delta, best, value, reference, expected):
    watcher = Watcher([], "val", mode=mode, min_delta=min_delta)
    watcher.best = best
    assert watcher.is_improvement(value, reference) is expected


def test_state_round_trips_and_a_resumed_run_compares_with_the_loaded_best():
    first, _ = watch({1: [0.5], 2: [0.3]}, max_epoch=2)
    state = json.loads(json.dumps(first.state_dict()))
    assert state == {"best": 0.3, "best_step": 6, "last_seen_step": 6}

    class ResumeAtStep6(tfloop.SessionInit):
        def _setup_graph(self):
            self.op = tfv1.assign(tfloop.get_global_step_var(), 6)

        def _run_init(self, sess):
            sess.run(self.op)

    log = []
    resumed = Watcher(log, "val")
    resumed.load_state_dict(state)
    train_linear([PutVal({3: [0.35], 4: [0.2]}), resumed], max_epoch=4, starting_epoch=3,
                 session_init=ResumeAtStep6())
    assert log == [(3, 9, 9, 0.35, False, 0.3, 6), (4, 12, 12, 0.2, True, 0.2, 12)]
    assert resumed.state_dict() == {"best": 0.2, "best_step": 12, "last_seen_step": 12}


def test_read_stat_is_the_newest_value_or_none_with_one_warning(log_warnings):
    class Reader(tfloop.StatMonitorCallback):
        def __init__(self, stat):
            super().__init__(stat)
            self.read = []

        def _on_new_value(self, step, value, improved):
            pass

        def _trigger(self):
            self.read.append(self.read_stat())

    present, absent = Reader("val"), Reader("other")
    train_linear([PutVal({1: [0.5], 2: [0.4, 0.3]}), present, absent], max_epoch=3)
    assert present.read == [0.5, 0.3, 0.3]
    assert absent.read == [None, None, None]
    assert len(log_warnings) == 1 and "Reader('other')" in log_warnings[0]


def test_a_subclass_without_on_new_value_is_told_what_to_implement():
    class Forgot(tfloop.StatMonitorCallback):
        pass

    with pytest.raises(NotImplementedError, match=r"Forgot must implement "
                                                  r"_on_new_value\(step, value, improved\)"):
        train_linear([PutVal({1: [0.5]}), Forgot("val")], max_epoch=1)


def test_stat_is_an_alias_of_monitor_stat():
    watcher = Watcher([], stat="val", mode="max")
    assert (watcher.monitor_stat, watcher.stat, watcher.mode) == ("val", "val", "max")
    with pytest.raises(TypeError, match=r"both stat='a' and monitor_stat='b'"):
        Watcher([], "b", stat="a")


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, r"Watcher: monitor_stat must be the monitored stat's name, a non-empty "
                     r"string, got None"),
    ({"monitor_stat": ""}, ValueError, "monitor_stat must be"),
    ({"stat": 3}, ValueError, "Watcher: stat must be"),
    ({"monitor_stat": "val", "mode": "up"}, ValueError, "mode must be one of min, max; got 'up'"),
    ({"monitor_stat": "val", "min_delta": -1}, ValueError, "min_delta must be a number >= 0"),
    ({"monitor_stat": "val", "min_delta": True}, ValueError, "min_delta must be a number"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        Watcher([], **kwargs)
