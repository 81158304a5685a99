"""HostMemoryTracker puts real RSS numbers; PeakMemoryTracker switches itself off without a GPU."""
import resource

import pytest
from support import train_linear

import tfloop
from tfloop.callbacks.memory import current_rss_bytes, peak_rss_bytes


def test_host_memory_is_put_every_epoch():
    trainer = train_linear([tfloop.HostMemoryTracker()], max_epoch=2)
    rss = trainer.monitors.get_history("HostMemory/rss_mb")
    peak = trainer.monitors.get_history("HostMemory/peak_rss_mb")
    assert [step for step, _ in rss] == [3, 6]
    assert [step for step, _ in peak] == [3, 6]
    # A process that imported TensorFlow holds well over 50 MiB, and never more than its peak.
    for (_, now), (_, top) in zip(rss, peak):
        assert 50 < now <= top
    assert 50 < current_rss_bytes() / 2 ** 20 < 1e6
    assert 0 < peak_rss_bytes() <= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def test_host_memory_follows_a_periodic_trigger():
    trainer = train_linear([tfloop.PeriodicTrigger(tfloop.HostMemoryTracker(), every_k_steps=2)],
                           max_epoch=2)
    assert [step for step, _ in trainer.monitors.get_history("HostMemory/rss_mb")] == [2, 4, 6]


def test_peak_memory_without_gpu_says_so_once_and_puts_nothing(tfloop_log):
    tracker = tfloop.PeakMemoryTracker(["/gpu:0", "GPU:1", "/device:GPU:2"])
    assert tracker.devices == ["GPU:0", "GPU:1", "GPU:2"]
    trainer = train_linear([tracker], max_epoch=2)
    notes = [msg for _, msg in tfloop_log if "PeakMemoryTracker" in msg]
    assert notes == ["PeakMemoryTracker: TensorFlow sees no GPU; not tracking GPU memory."]
    assert not [n for n in trainer.monitors.scalar_names() if n.startswith("PeakMemory")]


def test_peak_memory_takes_gpu_indices_as_tensorpack_does():
    assert tfloop.PeakMemoryTracker().devices == ["GPU:0"]
    assert tfloop.PeakMemoryTracker((0, 2)).devices == ["GPU:0", "GPU:2"]
    assert tfloop.GPUMemoryTracker is tfloop.PeakMemoryTracker


@pytest.mark.parametrize("devices", [[], ["/cpu:0"], ["gpu0"], [-1], [True]])
def test_peak_memory_rejects_devices_that_are_not_gpus(devices):
    with pytest.raises(ValueError, match="PeakMemoryTracker"):
        tfloop.PeakMemoryTracker(devices)
