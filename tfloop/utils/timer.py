"""Time sources that tests can replace."""
import time


class Clock:
    """A monotonic clock in seconds; pass a custom one to time-based callbacks in tests.

    Example:
        >>> clock = Clock()
        >>> t0 = clock(); elapsed = clock() - t0
    """

    def __call__(self):
        return time.monotonic()
