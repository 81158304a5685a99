"""ScheduledHyperParamSetter and HyperParamSetterWithFunc, asserted step by step on the learning
rate variable the optimizer really uses."""
import pytest
from support import FINAL_WEIGHTS_READ, LRModel, LRRecorder, RunCounter, train_linear

import tfloop
from tfloop.compat import tfv1

SCHEDULE_HINT = "e.g. [(0, 0.1), (30, 0.01), (60, 0.001)]"


class ScalarLog(tfloop.MonitorBase):
    def __init__(self):
        self.seen = []

    def process_scalar(self, name, value):
        self.seen.append((self.global_step, name, value))


def run(setter, max_epoch, **kwargs):
    """Train LRModel (3 steps per epoch) with ``setter``; the lr of every step and monitor puts."""
    recorder, log = LRRecorder(), ScalarLog()
    trainer = train_linear([setter, recorder], model=LRModel(), max_epoch=max_epoch, monitors=[log],
                           **kwargs)
    return recorder.lrs, log.seen, trainer


def puts(pairs):
    return [(step, "learning_rate", pytest.approx(value)) for step, value in pairs]


def test_epoch_schedule_takes_effect_after_the_epoch_of_each_point():
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(1, 0.05), (3, 0.01)])
    lrs, seen, trainer = run(setter, max_epoch=4)
    assert lrs == pytest.approx([0.1] * 3 + [0.05] * 6 + [0.01] * 3)
    assert seen == puts([(0, 0.1), (3, 0.05), (6, 0.05), (9, 0.01)])
    assert trainer.monitors.get_history("learning_rate") == [
        (0, pytest.approx(0.1)), (3, pytest.approx(0.05)), (6, pytest.approx(0.05)),
        (9, pytest.approx(0.01))]
    assert setter.last_value == pytest.approx(0.01)
    assert setter not in trainer.step_callbacks


def test_step_schedule_checked_after_every_step():
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.2), (2, 0.1), (5, 0.01)],
                                              step_based=True)
    lrs, seen, trainer = run(setter, max_epoch=2)
    assert lrs == pytest.approx([0.2, 0.2, 0.1, 0.1, 0.1, 0.01])
    # each epoch start puts the value in force; a change during the steps is put at once
    assert seen == puts([(0, 0.2), (2, 0.1), (3, 0.1), (5, 0.01)])
    assert setter in trainer.step_callbacks


@pytest.mark.parametrize("step_based,schedule,max_epoch,expected", [
    (False, [(1, 0.04), (5, 0.0)], 7, [0.1, 0.04, 0.03, 0.02, 0.01, 0.0, 0.0]),
    (True, [(0, 0.0), (4, 0.04)], 2, [0.0, 0.01, 0.02, 0.03, 0.04, 0.04]),
])
def test_linear_interpolation_between_points_then_hold(step_based, schedule, max_epoch, expected):
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", schedule, interp="linear",
                                              step_based=step_based)
    lrs, seen, _ = run(setter, max_epoch=max_epoch)
    per_point = lrs if step_based else lrs[::3]
    assert per_point == pytest.approx(expected)
    if not step_based:
        assert seen == puts([(0, 0.1), (3, 0.04), (6, 0.03), (9, 0.02), (12, 0.01), (15, 0.0),
                             (18, 0.0)])


@pytest.mark.parametrize("interp,schedule,starting_epoch,expected", [
    (None, [(1, 0.05), (3, 0.01)], 3, [0.05, 0.01, 0.01]),
    (None, [(1, 0.05), (3, 0.01)], 5, [0.01, 0.01, 0.01]),
    ("linear", [(1, 0.04), (5, 0.0)], 4, [0.02, 0.01, 0.0]),
])
def test_starting_mid_schedule_sets_the_value_reached_so_far(interp, schedule, starting_epoch,
                                                             expected):
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", schedule, interp=interp)
    lrs, seen, _ = run(setter, max_epoch=starting_epoch + 2, starting_epoch=starting_epoch)
    assert lrs[::3] == pytest.approx(expected)
    assert seen[0] == (0, "learning_rate", pytest.approx(expected[0]))


def test_resumed_global_step_sets_the_step_schedule_value():
    class ResumeAtStep4(tfloop.SessionInit):
        def _setup_graph(self):
            self.op = tfv1.assign(tfloop.get_global_step_var(), 4)

        def _run_init(self, sess):
            sess.run(self.op)

    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.2), (2, 0.1), (5, 0.01)],
                                              step_based=True)
    lrs, seen, _ = run(setter, max_epoch=1, session_init=ResumeAtStep4())
    assert lrs == pytest.approx([0.1, 0.01, 0.01])
    assert seen == puts([(4, 0.1), (5, 0.01)])


def test_loaded_state_does_not_stop_the_value_being_set_at_the_beginning():
    first = tfloop.ScheduledHyperParamSetter("learning_rate", [(1, 0.05)])
    run(first, max_epoch=1)
    assert first.state_dict() == {"last_value": pytest.approx(0.05)}
    resumed = tfloop.ScheduledHyperParamSetter("learning_rate", [(1, 0.05)])
    resumed.load_state_dict(first.state_dict())
    lrs, _, _ = run(resumed, max_epoch=3, starting_epoch=2)
    assert lrs[::3] == pytest.approx([0.05, 0.05])


def test_without_set_at_beginning_only_later_points_change_the_value():
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.2), (2, 0.05)],
                                              set_at_beginning=False)
    lrs, seen, _ = run(setter, max_epoch=3)
    assert lrs[::3] == pytest.approx([0.1, 0.1, 0.05])
    assert seen == puts([(0, 0.1), (3, 0.1), (6, 0.05)])


def test_a_point_between_periodic_triggers_is_applied_at_the_next_trigger():
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(1, 0.05)])
    lrs, _, _ = run(tfloop.PeriodicTrigger(setter, every_k_epochs=2), max_epoch=3)
    assert lrs[::3] == pytest.approx([0.1, 0.1, 0.05])


@pytest.mark.parametrize("schedule,fragment", [
    ([], "non-empty list"),
    ("30:0.1", "non-empty list"),
    ([30, 0.1], "schedule entry 0 (30) is not an (epoch or step, value) pair"),
    ([(1, 0.1, 2)], "schedule entry 0 ((1, 0.1, 2)) is not an"),
    ([(-1, 0.1)], "schedule entry 0 ((-1, 0.1)): the epoch or step must be an int >= 0, got -1"),
    ([("1.5", 0.1)], "must be an int >= 0, got '1.5'"),
    ([(1, "fast")], "schedule entry 0 ((1, 'fast')): the value must be a finite number"),
    ([(1, float("nan"))], "the value must be a finite number, got nan"),
    ([(1, 0.1), (1, 0.01)], "schedule entries 0 and 1 both set epoch/step 1 (to 0.1 and 0.01): "
                            "tensorpack silently used the first"),
    ([(5, 0.1), (0, 0.2), (5.0, 0.01)], "schedule entries 0 and 2 both set epoch/step 5"),
])
def test_bad_schedules_name_the_entry_and_show_a_valid_one(schedule, fragment):
    with pytest.raises(ValueError) as info:
        tfloop.ScheduledHyperParamSetter("learning_rate", schedule)
    assert fragment in str(info.value)
    assert SCHEDULE_HINT in str(info.value)


def test_bad_interp_is_refused():
    with pytest.raises(ValueError, match=r"interp must be None or 'linear', got 'cubic'"):
        tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1)], interp="cubic")


def test_step_based_func_warm_up_reads_the_value_along_with_the_step():
    calls = []

    def warm_up(step, lr):
        calls.append((step, lr))
        return 0.1 * (step + 1) / 4 if step < 4 else None

    counter = RunCounter()
    setter = tfloop.HyperParamSetterWithFunc("learning_rate", warm_up, step_based=True)
    recorder, log = LRRecorder(), ScalarLog()
    trainer = train_linear([counter, setter, recorder], model=LRModel(lr=0.5), max_epoch=2,
                           monitors=[log])
    assert recorder.lrs == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.1, 0.1])
    # before_train reads the variable once; afterwards the value comes with each step
    assert calls == [(0, pytest.approx(0.5)), (1, pytest.approx(0.025)), (2, pytest.approx(0.05)),
                     (3, pytest.approx(0.075)), (4, pytest.approx(0.1)), (5, pytest.approx(0.1)),
                     (6, pytest.approx(0.1))]
    # 6 steps + 1 read, 4 assignments and a read per epoch: no session.run per step of its own
    assert counter.runs == 6 + 1 + 4 + 2 + FINAL_WEIGHTS_READ
    # the change after step 3 is put at once, and again as epoch 2's value when it starts
    assert log.seen == puts([(0, 0.025), (1, 0.05), (2, 0.075), (3, 0.1), (3, 0.1)])
    assert setter in trainer.run_callbacks


def test_epoch_based_func_gets_the_epoch_and_current_value():
    calls = []

    def halve(epoch, lr):
        calls.append((epoch, lr))
        return lr * 0.5

    setter = tfloop.HyperParamSetterWithFunc("learning_rate", halve)
    lrs, seen, trainer = run(setter, max_epoch=3)
    assert lrs[::3] == pytest.approx([0.05, 0.025, 0.0125])
    assert calls == [(e, pytest.approx(v)) for e, v in [(0, 0.1), (1, 0.05), (2, 0.025),
                                                        (3, 0.0125)]]
    assert setter not in trainer.run_callbacks
    assert setter not in trainer.step_callbacks


def test_func_must_be_callable():
    with pytest.raises(TypeError, match="func must be callable"):
        tfloop.HyperParamSetterWithFunc("learning_rate", 0.1)


def test_a_value_infinite_in_float32_is_refused_before_training():
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (2, 1e39)])
    with pytest.raises(ValueError, match=r"schedule entry 1 \(2, 1e\+39\): GraphVarParam\("
                                         r"'learning_rate'\) cannot take the value 1e\+39: it does "
                                         r"not fit the variable's dtype float32"):
        run(setter, max_epoch=3)


def test_a_func_returning_nan_is_refused_naming_the_call():
    setter = tfloop.HyperParamSetterWithFunc("learning_rate",
                                             lambda epoch, lr: float("nan") if epoch else None)
    with pytest.raises(ValueError, match=r"func\(1, 0.1\d*\) returned nan, which is refused: .* "
                                         r"a hyper-parameter must be finite"):
        run(setter, max_epoch=3)


def test_the_global_step_cannot_be_scheduled():
    with pytest.raises(ValueError, match="global_step:0 is the global step, the count of training "
                                         "steps that the trainer keeps"):
        run(tfloop.ScheduledHyperParamSetter("global_step", [(0, 5)]), max_epoch=1)
