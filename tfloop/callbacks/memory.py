"""Memory use of the training process: host RSS and peak GPU memory, put to the monitors."""
import os
import re

from tfloop.callbacks.base import Callback
from tfloop.compat import tf
from tfloop.utils import logger
from tfloop.utils.checks import is_int

try:
    import resource
except ImportError:  # Windows
    resource = None

__all__ = ["HostMemoryTracker", "PeakMemoryTracker", "GPUMemoryTracker", "current_rss_bytes",
           "peak_rss_bytes"]

_MB = float(1 << 20)
_GPU_DEVICE = re.compile(r"/?(?:device:)?gpu:(\d+)", re.IGNORECASE)


def current_rss_bytes():
    """This process's resident memory in bytes, from ``/proc/self/statm``; None if unavailable."""
    try:
        with open("/proc/self/statm") as f:
            resident_pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes():
    """The largest resident memory this process has had, in bytes; None where unavailable."""
    if resource is None:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    return peak if os.uname().sysname == "Darwin" else peak * 1024


class HostMemoryTracker(Callback):
    """Put the training process's host memory at each trigger (every epoch by default).

    Scalars: ``HostMemory/rss_mb`` (resident memory now) and ``HostMemory/peak_rss_mb`` (the
    largest it has been), in MiB; either is left out where the system does not expose it.

    Example:
        >>> callbacks = [HostMemoryTracker()]
        >>> callbacks = [PeriodicTrigger(HostMemoryTracker(), every_k_steps=100)]
    """

    _chief_only = False

    def _trigger(self):
        rss, peak = current_rss_bytes(), peak_rss_bytes()
        if rss is not None and peak is not None:
            # The kernel updates the peak lazily; it can lag the current value by a few pages.
            peak = max(peak, rss)
        if rss is not None:
            self.trainer.monitors.put_scalar("HostMemory/rss_mb", rss / _MB)
        if peak is not None:
            self.trainer.monitors.put_scalar("HostMemory/peak_rss_mb", peak / _MB)


class PeakMemoryTracker(Callback):
    """Put the peak GPU memory allocated by TensorFlow since the previous trigger, per device.

    Scalars ``PeakMemory(MB)/gpu:<i>`` in MiB, from ``tf.config.experimental.get_memory_info``;
    the peak is reset after each report, so each value covers one period (an epoch by default).
    Without a GPU it says so once and does nothing.

    Args:
        devices (list[int or str]): GPU indices, or GPUs such as ``"/gpu:0"`` or ``"GPU:1"``.

    Example:
        >>> callbacks = [PeakMemoryTracker([0, 1])]
    """

    _chief_only = False

    def __init__(self, devices=(0,)):
        if isinstance(devices, (str, int)):
            devices = [devices]
        devices = [f"/gpu:{d}" if is_int(d) and d >= 0
                   else d for d in devices]
        devices = list(devices)
        if not devices:
            raise ValueError("PeakMemoryTracker needs at least one device such as '/gpu:0'.")
        self.devices = []
        for device in devices:
            match = _GPU_DEVICE.fullmatch(device) if isinstance(device, str) else None
            if match is None:
                raise ValueError("PeakMemoryTracker devices are GPUs such as '/gpu:0' or 'GPU:1'; "
                                 f"got {device!r}.")
            self.devices.append(f"GPU:{match.group(1)}")

    def _before_train(self):
        if not tf.config.list_physical_devices("GPU"):
            logger.info("PeakMemoryTracker: TensorFlow sees no GPU; not tracking GPU memory.")
            self.devices = []
            return
        usable = []
        for device in self.devices:
            try:
                tf.config.experimental.reset_memory_stats(device)
            except (ValueError, RuntimeError) as e:
                logger.warning(f"PeakMemoryTracker: no memory statistics for {device}: {e}")
                continue
            usable.append(device)
        self.devices = usable

    def _trigger(self):
        for device in self.devices:
            peak = tf.config.experimental.get_memory_info(device)["peak"]
            tf.config.experimental.reset_memory_stats(device)
            self.trainer.monitors.put_scalar(f"PeakMemory(MB)/gpu:{device.split(':')[1]}",
                                             peak / _MB)


GPUMemoryTracker = PeakMemoryTracker  # tensorpack's other name for it
