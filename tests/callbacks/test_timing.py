"""CallbackTimeLogger: call counts per callback and hook, the table, and the data it keeps."""
import time

import pytest
from support import RecordingCallback, train_linear

import tfloop


class Sleepy(tfloop.Callback):
    def _trigger_step(self):
        time.sleep(0.03)


class StopAt(tfloop.Callback):
    def __init__(self, step):
        self.step = step

    def _trigger_step(self):
        if self.global_step == self.step:
            raise tfloop.StopTraining("enough")


def by_key(rows):
    return {(row["callback"], row["hook"]): row for row in rows}


def test_sleeping_callback_dominates_with_exact_call_counts(tfloop_log):
    logger_cb = tfloop.CallbackTimeLogger()
    sleepy = Sleepy()
    train_linear([logger_cb, RecordingCallback("a", []), sleepy, RecordingCallback("b", [])],
                 max_epoch=2)

    assert [e["epoch"] for e in logger_cb.epoch_stats] == [1, 2]
    for epoch in logger_cb.epoch_stats:
        rows = epoch["rows"]
        assert (rows[0]["callback"], rows[0]["hook"], rows[0]["calls"]) == ("Sleepy",
                                                                            "trigger_step", 3)
        assert rows[0]["seconds"] >= 0.09                 # 3 sleeps of 30 ms
        assert 0 < rows[0]["share"] <= epoch["share"] < 1
        calls = {key: row["calls"] for key, row in by_key(rows).items()}
        for name in ("RecordingCallback", "RecordingCallback#2"):
            assert {hook: n for (cb, hook), n in calls.items() if cb == name} == {
                "before_epoch": 1, "before_run": 3, "after_run": 3, "trigger_step": 3,
                "after_epoch": 1, "trigger_epoch": 1}
        # Only hooks a callback overrides are timed: Sleepy has just trigger_step.
        assert [hook for (cb, hook) in calls if cb == "Sleepy"] == ["trigger_step"]
        assert ("MaintainStepCounter", "after_run") in calls
    assert not {"before_epoch", "before_run", "trigger_step"} & set(vars(sleepy))  # unpatched

    totals = by_key(logger_cb.get_stats())
    assert totals[("Sleepy", "trigger_step")]["calls"] == 6
    assert totals[("RecordingCallback", "before_train")]["calls"] == 1
    assert logger_cb.get_stats()[0]["callback"] == "Sleepy"

    tables = [msg for _, msg in tfloop_log if msg.startswith("Callbacks took")]
    assert len(tables) == 2
    header, _, first_row = tables[0].splitlines()[1:4]
    assert header.split() == ["callback", "hook", "total", "ms", "calls", "share", "of", "epoch"]
    assert first_row.split()[:2] == ["Sleepy", "trigger_step"]
    assert first_row.split()[3] == "3"


def test_min_share_one_never_logs_but_keeps_the_data(tfloop_log):
    logger_cb = tfloop.CallbackTimeLogger(min_share=1)
    train_linear([Sleepy(), logger_cb], max_epoch=2)
    assert not [msg for _, msg in tfloop_log if msg.startswith("Callbacks took")]
    assert by_key(logger_cb.get_stats())[("Sleepy", "trigger_step")]["calls"] == 6


def test_training_stopped_mid_epoch_reports_the_partial_epoch(tfloop_log):
    logger_cb = tfloop.CallbackTimeLogger(min_share=0)
    train_linear([logger_cb, Sleepy(), StopAt(5)], max_epoch=3)
    assert [(e["epoch"], e["finished"]) for e in logger_cb.epoch_stats] == [(1, True), (2, False)]
    assert by_key(logger_cb.epoch_stats[1]["rows"])[("Sleepy", "trigger_step")]["calls"] == 2
    assert any("of epoch 2 (stopped early)" in msg for _, msg in tfloop_log)
    assert by_key(logger_cb.get_stats())[("Sleepy", "trigger_step")]["calls"] == 5


def test_wrapped_callbacks_are_timed_as_a_whole():
    logger_cb = tfloop.CallbackTimeLogger()
    train_linear([tfloop.PeriodicTrigger(RecordingCallback("r", []), every_k_steps=2), logger_cb],
                 max_epoch=1)
    hooks = {hook for cb, hook in by_key(logger_cb.get_stats())
             if cb == "PeriodicTrigger(RecordingCallback)"}
    assert {"trigger_step", "before_run", "after_run", "before_train"} <= hooks


@pytest.mark.parametrize("kwargs", [{"min_share": 1.5}, {"min_share": -0.1}, {"max_rows": 0}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match="CallbackTimeLogger"):
        tfloop.CallbackTimeLogger(**kwargs)
