"""Each wrapper's schedule, asserted step by step."""
import pytest
from support import RecordingCallback, train_linear

import tfloop


def calls(log, hook):
    """(epoch, global_step) of each call of ``hook``."""
    return [(e[2], e[3]) for e in log if e[1] == hook]


def test_periodic_trigger_every_k_steps_and_epochs():
    log = []
    cb = tfloop.PeriodicTrigger(RecordingCallback("r", log), every_k_steps=2, every_k_epochs=2)
    train_linear([cb], max_epoch=4)
    # 3 steps per epoch, 12 steps: step triggers at 2,4,...,12 and epoch triggers after epochs 2, 4.
    assert calls(log, "trigger") == [(1, 2), (2, 4), (2, 6), (2, 6), (3, 8), (4, 10), (4, 12),
                                     (4, 12)]
    # The wrapped callback's own per-step hooks still run every step.
    assert len(calls(log, "trigger_step")) == 12


def test_periodic_trigger_before_train():
    log = []
    train_linear([tfloop.PeriodicTrigger(RecordingCallback("r", log), every_k_epochs=5,
                                         before_train=True)], max_epoch=2)
    assert calls(log, "trigger") == [(0, 0)]


def test_periodic_trigger_every_k_seconds_with_an_injected_clock():
    now = [0.0]

    def clock():
        return now[0]

    class Tick(tfloop.Callback):
        def _trigger_step(self):
            now[0] += 1.5          # every step takes 1.5 "seconds"

    log = []
    train_linear([Tick(), tfloop.PeriodicTrigger(RecordingCallback("r", log), every_k_seconds=4,
                                                 clock=clock)], max_epoch=3)
    # The clock when steps 1..9 start: 0, 1.5, 3, 4.5*, 6, 7.5, 9*, 10.5, 12 (* = >= 4 s since
    # the last trigger, which restarts the count): the trigger follows steps 4 and 7.
    assert calls(log, "trigger") == [(2, 4), (3, 7)]


def test_periodic_callback_runs_all_hooks_only_when_due():
    log = []
    train_linear([tfloop.PeriodicCallback(RecordingCallback("r", log), every_k_steps=2)],
                 max_epoch=2)
    # Its hooks go with the steps that end at 2, 4, 6: before_run sees the steps finished
    # before each (1, 3, 5), after_run and trigger_step see 2, 4, 6.
    assert calls(log, "before_run") == [(1, 1), (2, 3), (2, 5)]
    assert calls(log, "after_run") == calls(log, "trigger_step") == [(1, 2), (2, 4), (2, 6)]
    assert calls(log, "trigger") == [(2, 6)]
    assert calls(log, "before_train") == [(0, 0)]
    assert calls(log, "after_train") == [(2, 6)]


def test_periodic_callback_every_k_epochs():
    log = []
    train_linear([tfloop.PeriodicCallback(RecordingCallback("r", log), every_k_epochs=2)],
                 max_epoch=3)
    assert calls(log, "trigger") == [(2, 6)]
    assert calls(log, "before_epoch") == [(2, 3)]
    assert len(calls(log, "after_run")) == 3


def test_enable_callback_if_predicate_on_state():
    log = []
    cb = tfloop.EnableCallbackIf(RecordingCallback("r", log), lambda self: self.epoch_num >= 2)
    train_linear([cb], max_epoch=2)
    assert {epoch for epoch, _ in calls(log, "after_run")} == {2}
    assert calls(log, "trigger") == [(2, 6)]
    assert calls(log, "before_epoch") == [(2, 3)]


def test_callback_factory():
    seen = []
    cb = tfloop.CallbackFactory(setup_graph=lambda self: seen.append("setup"),
                                before_train=lambda self: seen.append("before"),
                                trigger=lambda self: seen.append(self.epoch_num),
                                after_train=lambda self: seen.append("after"))
    train_linear([cb], max_epoch=2)
    assert seen == ["setup", "before", 1, 2, "after"]


@pytest.mark.parametrize("kwargs,message", [
    ({}, "needs every_k_steps, every_k_epochs or every_k_seconds"),
    ({"every_k_steps": 0}, "every_k_steps must be a positive number, got 0"),
    ({"every_k_epochs": -1}, "every_k_epochs must be a positive number, got -1"),
    ({"every_k_seconds": "5"}, "every_k_seconds must be a positive number, got '5'"),
])
def test_periodic_trigger_rejects_bad_periods(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tfloop.PeriodicTrigger(tfloop.Callback(), **kwargs)


def test_wrappers_reject_non_callbacks():
    with pytest.raises(TypeError, match="wraps a Callback"):
        tfloop.PeriodicTrigger(lambda: None, every_k_steps=1)
    with pytest.raises(TypeError,
                       match=r"EnableCallbackIf: pred must be callable as pred\(self\) -> bool"):
        tfloop.EnableCallbackIf(tfloop.Callback(), pred=True)
