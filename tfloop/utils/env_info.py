"""A table of the software and hardware a run used, for bug reports."""
import importlib.metadata
import os
import platform
import sys

from tabulate import tabulate

from tfloop.version import __version__

__all__ = ["collect_env_info"]

# tfloop's own row is the version of the code that runs, whatever distribution installed it.
_PACKAGES = ["tensorflow", "tensorflow-cpu", "keras", "numpy", "tensorpack", "pyzmq",
             "opencv-python-headless", "opencv-python", "lmdb"]


def collect_env_info() -> str:
    """A table of the Python, platform, CPU count, CUDA devices and package versions (without
    importing TensorFlow).

    Example:
        >>> logger.info("Environment:\\n" + collect_env_info())
    """
    rows = [("sys.platform", sys.platform), ("Python", sys.version.replace("\n", " ")),
            ("platform", platform.platform()), ("CPU count", os.cpu_count()),
            ("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "unset")),
            ("tfloop", __version__)]
    for package in _PACKAGES:
        try:
            rows.append((package, importlib.metadata.version(package)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return tabulate(rows)
