"""tensorpack's NVML wrapper, at its path. tfloop reads GPUs through ``nvidia-smi`` or ``pynvml``
in a child process instead (``GPUUtilizationTracker``, :mod:`tfloop.utils.gpu`)."""
from tfloop.utils.develop import unavailable

__all__ = ["NVMLContext"]

NVMLContext = unavailable(
    "NVMLContext", "tfloop does not load the NVML library into the training process. Use "
    "tfloop.utils.gpu.get_num_gpu() for the GPU count, GPUUtilizationTracker for utilization, "
    "or pynvml directly.")
