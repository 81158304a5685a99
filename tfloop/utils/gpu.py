"""How many GPUs this process may use, without importing TensorFlow."""
import glob
import os
import shutil
import subprocess

from tfloop.utils import logger
from tfloop.utils.utils import change_env

__all__ = ["get_num_gpu", "get_nr_gpu", "change_gpu"]


def change_gpu(val):
    """A context in which ``CUDA_VISIBLE_DEVICES`` is ``val`` (-1: no GPU).

    Example:
        >>> with change_gpu(1):
        ...     start_worker()            # sees only GPU 1
    """
    val = str(val)
    return change_env("CUDA_VISIBLE_DEVICES", "" if val == "-1" else val)


def _nvidia_smi_count():
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return len([line for line in out.stdout.splitlines() if line.startswith("GPU ")])


def get_num_gpu() -> int:
    """The number of GPUs this process may use: those in ``CUDA_VISIBLE_DEVICES`` when it is set
    (empty: none), else those ``nvidia-smi -L`` lists, else those the NVIDIA driver lists in
    ``/proc/driver/nvidia/gpus`` (0 without a driver).

    Example:
        >>> trainer = SyncMultiGPUTrainerReplicated(max(get_num_gpu(), 1))
    """
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return len([d for d in env.split(",") if d.strip()])
    count = _nvidia_smi_count()
    if count is not None:
        return count
    return len(glob.glob("/proc/driver/nvidia/gpus/*"))


def get_nr_gpu() -> int:
    """The old name of :func:`get_num_gpu`."""
    logger.warning("get_nr_gpu() is the old name of get_num_gpu().")
    return get_num_gpu()
