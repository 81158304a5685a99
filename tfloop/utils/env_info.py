"""A table of the software and hardware a run used, for bug reports."""
import importlib.metadata
import os
import platform
import sys

from tabulate import tabulate

__all__ = ["collect_env_info"]

_PACKAGES = ["tfloop", "tensorflow", "tensorflow-cpu", "keras", "numpy", "tensorpack", "pyzmq",
             "opencv-python-headless", "opencv-python", "lmdb"]


def collect_env_info() -> str:
    """A table of the Python, platform, CPU count, CUDA devices and package versions (without
    importing TensorFlow).

    Example:
        >>> logger.info("Environment:\\n" + collect_env_info())
    """
    rows = [("sys.platform", sys.platform), ("Python", sys.version.replace("\n", " ")),
            ("platform", platform.platform()), ("CPU count", os.cpu_count()),
            ("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))]
    for package in _PACKAGES:
        try:
            rows.append((package, importlib.metadata.version(package)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return tabulate(rows)
