"""tensorpack's callbacks/param_test.py scenarios, through tfloop's public names: a
ScheduledHyperParamSetter on an object attribute under a NoOpTrainer."""
import unittest.mock

import pytest

from tfloop import NoOpTrainer, ObjAttrParam, ScheduledHyperParamSetter
from tfloop.utils import logger


class ParamObject:
    """Records each value set on ``param`` with the global step it was set at."""

    def __init__(self):
        self.history = {}
        self.trainer = None
        self.__dict__["param"] = 1.0

    def __setattr__(self, name, value):
        if name == "param":
            self.history[self.trainer.global_step] = value
        super().__setattr__(name, value)


def run_schedule(schedule, steps_per_epoch, max_epoch, starting_epoch=1, **kwargs):
    obj = ParamObject()
    setter = ScheduledHyperParamSetter(ObjAttrParam(obj, "param"), schedule, **kwargs)
    trainer = NoOpTrainer()
    obj.trainer = trainer
    trainer.train_with_defaults(callbacks=[setter], extra_callbacks=[], monitors=[],
                                steps_per_epoch=steps_per_epoch, max_epoch=max_epoch,
                                starting_epoch=starting_epoch)
    return obj.history


def test_step_based_linear_interpolation():
    history = run_schedule([(30, 0.3), (40, 0.4), (50, 0.5)], 10, 50, starting_epoch=20,
                           interp="linear", step_based=True)
    assert min(history) == 30
    assert (history[30], history[40], history[45]) == (0.3, 0.4, 0.45)


def test_epoch_schedule_sets_each_point_once():
    history = run_schedule([(10, 0.3), (20, 0.4), (30, 0.5)], 1, 50)
    assert history == {10: 0.3, 20: 0.4, 30: 0.5}


def test_start_after_the_schedule():
    assert run_schedule([(10, 0.3), (20, 0.4), (30, 0.5)], 1, 92, starting_epoch=90,
                        set_at_beginning=False) == {}
    assert run_schedule([(10, 0.3), (20, 0.4), (30, 0.5)], 1, 92, starting_epoch=90,
                        set_at_beginning=True) == {0: 0.5}


def test_starting_mid_schedule_with_another_value_warns(tfloop_log):
    run_schedule([(10, 0.3), (20, 0.4), (30, 0.5)], 1, 21, starting_epoch=20)
    warnings = [msg for level, msg in tfloop_log if level == "WARNING"]
    assert warnings == [
        "ScheduledHyperParamSetter('param'): by the schedule, 'param' should be 0.3 after epoch "
        "19, where training starts, but it is 1; it is set now (set_at_beginning=True)."]


def test_starting_mid_schedule_with_the_scheduled_value_does_not_warn():
    with unittest.mock.patch.object(logger, "warning") as warning:
        run_schedule([(10, 0.3), (20, 1.0), (30, 1.5)], 1, 22, starting_epoch=21)
    assert not warning.called


@pytest.mark.parametrize("set_at_beginning, expected", [(True, {0: 0.3}), (False, {})])
def test_the_warning_says_what_happens_next(tfloop_log, set_at_beginning, expected):
    history = run_schedule([(10, 0.3), (20, 0.4)], 1, 12, starting_epoch=12,
                           set_at_beginning=set_at_beginning)
    assert history == expected
    warnings = [msg for level, msg in tfloop_log if level == "WARNING"]
    assert len(warnings) == 1
    assert ("it is set now" in warnings[0]) == set_at_beginning
