"""StopEpoch: a callback ends the current epoch; the epoch's end hooks run, training goes on."""
import pytest
from support import train_linear

import tfloop
from tfloop import StopEpoch


class Recorder(tfloop.Callback):
    """Every hook with the epoch and global step it saw; raises StopEpoch after ``stop_at``."""

    _chief_only = False

    def __init__(self, stop_at=()):
        self.stop_at = set(stop_at)
        self.calls = []

    def _before_epoch(self):
        self.calls.append(("before_epoch", self.epoch_num, self.global_step))

    def _trigger_step(self):
        self.calls.append(("trigger_step", self.epoch_num, self.global_step))
        if self.global_step in self.stop_at:
            raise StopEpoch(f"enough at step {self.global_step}")

    def _after_epoch(self):
        self.calls.append(("after_epoch", self.epoch_num, self.global_step))

    def _trigger_epoch(self):
        self.calls.append(("trigger_epoch", self.epoch_num, self.global_step))

    def _after_train(self):
        self.calls.append(("after_train", self.epoch_num, self.global_step))


def test_stop_epoch_ends_the_epoch_after_the_step_and_training_goes_on(log_lines):
    recorder = Recorder(stop_at=[1])
    trainer = train_linear([recorder], max_epoch=2)
    assert recorder.calls == [
        ("before_epoch", 1, 0), ("trigger_step", 1, 1),
        ("after_epoch", 1, 1), ("trigger_epoch", 1, 1),
        ("before_epoch", 2, 1), ("trigger_step", 2, 2), ("trigger_step", 2, 3),
        ("trigger_step", 2, 4), ("after_epoch", 2, 4), ("trigger_epoch", 2, 4),
        ("after_train", 2, 4)]
    assert trainer.global_step == 4 and trainer.training_error is None
    assert "Epoch 1 ends early at global step 1: enough at step 1" in log_lines
    assert "Training has finished." in log_lines


def test_stop_epoch_in_the_last_epoch_finishes_training():
    recorder = Recorder(stop_at=[4])
    trainer = train_linear([recorder], max_epoch=2)
    assert [c for c in recorder.calls if c[0] != "trigger_step"][-3:] == [
        ("after_epoch", 2, 4), ("trigger_epoch", 2, 4), ("after_train", 2, 4)]
    assert trainer.global_step == 4


@pytest.mark.parametrize("name", ["StopEpoch"])
def test_exported(name):
    assert getattr(tfloop, name) is getattr(tfloop.callbacks, name)
