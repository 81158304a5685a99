"""Helpers with no TensorFlow graph code: the logger, timing and small utilities."""
from tfloop.utils import logger
from tfloop.utils.timer import Clock

__all__ = ["logger", "Clock"]
