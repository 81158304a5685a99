"""Time sources that tests can replace, and tensorpack's ``timed_operation``."""
import time
from contextlib import contextmanager

from tfloop.utils import logger

__all__ = ["Clock", "timed_operation"]


class Clock:
    """A monotonic clock in seconds; pass a custom one to time-based callbacks in tests.

    Example:
        >>> clock = Clock()
        >>> t0 = clock(); elapsed = clock() - t0
    """

    def __call__(self):
        return time.monotonic()


@contextmanager
def timed_operation(msg, log_start=False):
    """Log how long the block took: ``"<Msg> finished, time:0.1234 sec."`` (tensorpack's name).

    Args:
        msg (str): what the block does; its first letter is capitalized in the log.
        log_start (bool): also log ``"Start <msg> ..."`` when the block starts.

    Raises:
        ValueError: ``msg`` is empty.

    Example:
        >>> with timed_operation("load annotations"):
        ...     annotations = json.load(f)
    """
    if not isinstance(msg, str) or not msg:
        raise ValueError(f"timed_operation needs a non-empty message, got {msg!r}.")
    if log_start:
        logger.info(f"Start {msg} ...")
    start = time.perf_counter()
    yield
    logger.info(f"{msg[0].upper() + msg[1:]} finished, time:{time.perf_counter() - start:.4f} sec.")
