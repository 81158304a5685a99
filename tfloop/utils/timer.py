"""Time sources that tests can replace, and tensorpack's ``timed_operation`` and ``total_timer``."""
import atexit
import time
from contextlib import contextmanager

from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int
from tfloop.utils.coerce import tensorpack_int
from tfloop.utils.stats import StatCounter

__all__ = ["Clock", "timed_operation", "IterSpeedCounter", "Timer"]


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


class IterSpeedCounter:
    """Count calls and log their rate every ``print_every`` calls (tensorpack's name):
    ``"<name>: 1.23 sec, 100 times, 0.0123 sec/time"``, timed from the first call.

    Example:
        >>> speed = IterSpeedCounter(100, "load")
        >>> for dp in df:
        ...     speed()
    """

    def __init__(self, print_every, name=None, clock=time.perf_counter):
        self.print_every = check_positive_int(
            tensorpack_int(print_every, "IterSpeedCounter: print_every"),
            "IterSpeedCounter: print_every")
        self.name = name or "IterSpeed"
        self.count = 0
        self._clock = clock
        self.start = None

    def reset(self):
        """Time from now."""
        self.start = self._clock()

    def __call__(self):
        if self.count == 0:
            self.reset()
        self.count += 1
        if self.count % self.print_every == 0:
            elapsed = self._clock() - self.start
            logger.info(f"{self.name}: {elapsed:.2f} sec, {self.count} times, "
                        f"{elapsed / self.count:.3g} sec/time")


class Timer:
    """Seconds since the start (or the last :meth:`reset`), without the time it was paused.

    Example:
        >>> timer = Timer(); work(); timer.pause(); wait(); timer.resume()
        >>> timer.seconds()   # the time of work() only
    """

    def __init__(self, clock=time.perf_counter):
        self._clock = clock
        self.reset()

    def reset(self):
        """Start again from zero, running."""
        self._start = self._clock()
        self._paused_at = None
        self._total_paused = 0.0

    def pause(self):
        if self._paused_at is not None:
            raise RuntimeError("Timer.pause(): the timer is paused already.")
        self._paused_at = self._clock()

    def is_paused(self):
        return self._paused_at is not None

    def resume(self):
        if self._paused_at is None:
            raise RuntimeError("Timer.resume(): the timer is not paused.")
        self._total_paused += self._clock() - self._paused_at
        self._paused_at = None

    def seconds(self):
        """The running time so far, paused periods excluded."""
        now = self._paused_at if self._paused_at is not None else self._clock()
        return now - self._start - self._total_paused


_TOTALS: dict = {}


@contextmanager
def total_timer(msg):
    """Add the time spent in the block to the total kept under ``msg``; the totals are logged
    by :func:`print_total_timer`, and once more when the process exits (as in tensorpack).

    Example:
        >>> with total_timer("preprocess"):
        ...     batch = preprocess(images)
    """
    if not _TOTALS:
        atexit.register(print_total_timer)
    start = time.perf_counter()
    try:
        yield
    finally:
        _TOTALS.setdefault(msg, StatCounter()).feed(time.perf_counter() - start)


def print_total_timer():
    """Log every total of :func:`total_timer`: seconds, count and seconds per call.

    Example:
        >>> print_total_timer()   # Total time: preprocess -> 1.52 sec, 10 times, 0.152 sec/time
    """
    for msg, counter in _TOTALS.items():
        logger.info(f"Total time: {msg} -> {counter.sum:.2f} sec, {counter.count} times, "
                    f"{counter.average:.3g} sec/time")
