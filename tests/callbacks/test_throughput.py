"""ThroughputTracker and EstimatedTimeLeft, timed with a scripted clock."""

import pytest
from support import batches, dataset_fn, make_regression_data, train_linear

import tfloop
from tfloop import EstimatedTimeLeft, ThroughputTracker
from tfloop.callbacks.throughput import format_duration


class ScriptedClock:
    """Returns the given times, one per call."""

    def __init__(self, *times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


def throughput(trainer):
    monitors = trainer.monitors
    names = [n for n in monitors.scalar_names() if n.startswith("throughput/")]
    return {n: monitors.get_history(n) for n in names}


def test_steps_and_samples_per_second_with_a_varying_batch_size():
    x, y = make_regression_data(10)                       # batches of 4, 4, 2
    tracker = ThroughputTracker(clock=ScriptedClock(0.0, 2.0, 10.0, 15.0))
    trainer = train_linear([tracker], data=tfloop.FeedInput(batches(x, y, 4)))
    assert tracker in trainer.run_callbacks            # fetches the batch size of each step
    assert throughput(trainer) == {
        "throughput/steps_per_sec": [(3, 1.5), (6, 0.6)],
        "throughput/samples_per_sec": [(3, 5.0), (6, 2.0)],
    }


def test_static_batch_size_needs_no_fetch():
    x, y = make_regression_data(12)
    data = tfloop.DatasetInput(
        lambda: dataset_fn(x, y, 4)().unbatch().batch(4, drop_remainder=True))
    tracker = ThroughputTracker(clock=ScriptedClock(0.0, 3.0))
    trainer = train_linear([tracker], data=data, steps_per_epoch=3, max_epoch=1)
    assert tracker not in trainer.run_callbacks
    assert throughput(trainer) == {"throughput/steps_per_sec": [(3, 1.0)],
                                   "throughput/samples_per_sec": [(3, 4.0)]}


def test_given_samples_per_step():
    tracker = ThroughputTracker(samples_per_step=32, clock=ScriptedClock(1.0, 4.0))
    trainer = train_linear([tracker], max_epoch=1)
    assert tracker not in trainer.run_callbacks
    assert throughput(trainer) == {"throughput/steps_per_sec": [(3, 1.0)],
                                   "throughput/samples_per_sec": [(3, 32.0)]}


@pytest.mark.parametrize("value", [0, -3, "sixty-four", True])
def test_bad_samples_per_step_is_rejected(value):
    with pytest.raises(ValueError, match="samples_per_step must be a positive number"):
        ThroughputTracker(samples_per_step=value)



def test_estimated_time_left_uses_the_last_k_epochs(log_lines):
    # Epochs take 10 s, 20 s and 60 s, then 10 s; 5 epochs in all.
    clock = ScriptedClock(100.0, 110.0, 130.0, 190.0, 200.0, 210.0)
    train_linear([EstimatedTimeLeft(last_k_epochs=2, clock=clock)], max_epoch=5)
    assert [m for m in log_lines if m.startswith("Estimated")] == [
        "Estimated time left: 40.0s", "Estimated time left: 45.0s",
        "Estimated time left: 1m 20s", "Estimated time left: 35.0s"]


@pytest.mark.parametrize("median, last", [(True, "10.0s"), (False, "1m 07s")])
def test_median_ignores_an_odd_epoch_and_mean_does_not(median, last, log_lines):
    clock = ScriptedClock(0.0, 10.0, 20.0, 200.0, 210.0)
    train_linear([EstimatedTimeLeft(last_k_epochs=3, median=median, clock=clock)], max_epoch=4)
    assert [m for m in log_lines if m.startswith("Estimated")] == [
        "Estimated time left: 30.0s", "Estimated time left: 20.0s",
        "Estimated time left: " + last]


@pytest.mark.parametrize("seconds, text", [
    (0.25, "0.2s"), (59.94, "59.9s"), (60, "1m 00s"), (3725, "1h 02m 05s"),
    (2 * 86400 + 3 * 3600 + 59, "2d 03h 00m"),
])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_bad_last_k_epochs_is_rejected():
    with pytest.raises(ValueError, match="last_k_epochs must be an int >= 1"):
        EstimatedTimeLeft(last_k_epochs=0)


def test_epoch_whose_start_a_wrapper_skipped_puts_nothing():
    tracker = ThroughputTracker(samples_per_step=4, clock=ScriptedClock(0.0))
    only_after_steps = tfloop.EnableCallbackIf(tracker, lambda self: self.local_step >= 0)
    trainer = train_linear([only_after_steps], max_epoch=1)
    assert throughput(trainer) == {}


def test_samples_per_second_counts_every_step_of_a_multi_step_call():
    x, y = make_regression_data(24)
    data = tfloop.DatasetInput(dataset_fn(x, y, 4))          # batch size unknown to the graph
    tracker = ThroughputTracker(clock=ScriptedClock(0.0, 2.0))
    trainer = train_linear([tracker], data=data, steps_per_epoch=6, max_epoch=1, steps_per_run=3)
    assert tracker in trainer.run_callbacks
    assert throughput(trainer) == {"throughput/steps_per_sec": [(6, 3.0)],
                                   "throughput/samples_per_sec": [(6, 12.0)]}
