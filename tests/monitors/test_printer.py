"""ScalarPrinter: what is printed, when, and which names."""
import re

import pytest
from support import train_linear

from tfloop import Callback, ScalarPrinter

NAMES = ("step", "epoch", "a", "b", "c")


class ScriptedClock:
    """Returns the given times, one per call."""

    def __init__(self, *times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


class PutScalars(Callback):
    def _trigger_step(self):
        self.trainer.monitors.put_scalar("step", self.global_step)

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("epoch", self.epoch_num * 10)


def printed(tfloop_log):
    return [m for level, m in tfloop_log if level == "INFO" and m.split(":")[0] in NAMES]


def compact_lines(tfloop_log):
    """The epoch lines, without the epoch's time (see the test with a scripted clock)."""
    return [re.sub(r" · \d+\.\d\d s", "", m) for level, m in tfloop_log
            if level == "INFO" and m.startswith("epoch ")]


class PutValues(Callback):
    def _trigger_epoch(self):
        for name, value in (("c", 1234.56789 * self.epoch_num), ("a", 2), ("b", 1 / 3)):
            self.trainer.monitors.put_scalar(name, value)


def test_one_line_per_epoch_sorted_by_name_with_five_digits(tfloop_log):
    train_linear([PutValues()], monitors=[ScalarPrinter()])
    assert compact_lines(tfloop_log) == ["epoch 1 · step 3 · a 2 · b 0.33333 · c 1234.6",
                                         "epoch 2 · step 6 · a 2 · b 0.33333 · c 2469.1"]
    assert printed(tfloop_log) == []


def test_an_epoch_line_shows_the_time_since_the_epoch_began(tfloop_log):
    clock = ScriptedClock(10.0, 10.25, 20.0, 32.5)    # before_epoch, print, for each epoch
    train_linear([PutValues()], monitors=[ScalarPrinter(clock=clock)])
    assert [m for level, m in tfloop_log if m.startswith("epoch ")] == [
        "epoch 1 · step 3 · 0.25 s · a 2 · b 0.33333 · c 1234.6",
        "epoch 2 · step 6 · 12 s · a 2 · b 0.33333 · c 2469.1"]


def test_a_line_per_scalar_when_not_compact(tfloop_log):
    train_linear([PutValues()], monitors=[ScalarPrinter(compact=False)])
    assert printed(tfloop_log) == ["a: 2", "b: 0.33333", "c: 1234.6",
                                   "a: 2", "b: 0.33333", "c: 2469.1"]
    assert compact_lines(tfloop_log) == []


def test_debug_level_adds_the_full_listing(tfloop_log):
    import logging
    logging.getLogger("tfloop").setLevel(logging.DEBUG)
    try:
        train_linear([PutValues()], monitors=[ScalarPrinter()], max_epoch=1)
    finally:
        logging.getLogger("tfloop").setLevel(logging.INFO)
    assert compact_lines(tfloop_log) == ["epoch 1 · step 3 · a 2 · b 0.33333 · c 1234.6"]
    assert [m for level, m in tfloop_log if level == "DEBUG" and m[:2] in ("a:", "b:", "c:")] == [
        "a: 2", "b: 0.33333", "c: 1234.6"]


def test_whitelist_and_blacklist_are_searched_anywhere_in_the_name(tfloop_log):
    names = ["val-error", "train-error", "cost", "val-cost", "epoch"]

    class PutNames(Callback):
        def _trigger_epoch(self):
            for name in names:
                self.trainer.monitors.put_scalar(name, 1)

    printer = ScalarPrinter(whitelist=["^val-", "cost"], blacklist="val-cost")
    train_linear([PutNames()], monitors=[printer], max_epoch=1)
    assert [name for name in names if printer.is_printed(name)] == ["val-error", "cost"]
    assert compact_lines(tfloop_log) == ["epoch 1 · step 3 · cost 1 · val-error 1"]


def test_step_printing_leaves_the_last_step_to_the_epoch_print(tfloop_log):
    train_linear([PutScalars()], monitors=[ScalarPrinter(enable_step=True, compact=False)])
    assert printed(tfloop_log) == ["step: 1", "step: 2", "epoch: 10", "step: 3",
                                     "step: 4", "step: 5", "epoch: 20", "step: 6"]


def test_step_only_printing_shows_epoch_values_at_the_next_print(tfloop_log):
    train_linear([PutScalars()], monitors=[ScalarPrinter(enable_step=True, enable_epoch=False,
                                                         compact=False)])
    assert printed(tfloop_log) == ["step: 1", "step: 2", "step: 3", "epoch: 10", "step: 4",
                                     "step: 5", "step: 6", "epoch: 20"]


def test_scalars_pending_when_training_stops_are_printed(tfloop_log):
    class StopAfterPutting(Callback):
        def _trigger_epoch(self):
            from tfloop import StopTraining
            self.trainer.monitors.put_scalar("a", 0.5)
            raise StopTraining("done")

    train_linear([StopAfterPutting()], monitors=[ScalarPrinter()], max_epoch=3)
    assert compact_lines(tfloop_log) == ["epoch 1 · step 3 · a 0.5"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(whitelist=["val-("]), "whitelist entry 'val-\\(' is not a valid regex"),
    (dict(blacklist=[3]), "blacklist entry 3 is not a valid regex"),
    (dict(enable_step=False, enable_epoch=False), "would never print"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ScalarPrinter(**kwargs)
