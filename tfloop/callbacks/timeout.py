"""SessionRunTimeout: a time limit on every training step's ``session.run``."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tfv1
from tfloop.utils.checks import check_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["SessionRunTimeout"]


class SessionRunTimeout(Callback):
    """Make each training step's ``session.run`` fail with ``tf.errors.DeadlineExceededError``
    when it takes longer than ``timeout_in_ms`` (e.g. a stalled input pipeline or a lost worker);
    the error ends training like any other.

    Args:
        timeout_in_ms (int): the limit per step, in milliseconds (> 0).

    Example:
        >>> callbacks = [SessionRunTimeout(60 * 1000)]      # a step may take up to a minute
    """

    def __init__(self, timeout_in_ms):
        name = "SessionRunTimeout: timeout_in_ms"
        timeout_in_ms = check_int(tensorpack_int(timeout_in_ms, name), name, above=0)
        self._timeout = timeout_in_ms
        self._run_args = tfv1.train.SessionRunArgs(
            fetches=[], options=tfv1.RunOptions(timeout_in_ms=timeout_in_ms))

    def _before_run(self, ctx):
        return self._run_args

    def __str__(self):
        return f"SessionRunTimeout({self._timeout})"
