"""One call run in a daemon thread: a tracker's network call that training waits for only as long
as it chooses, and that never keeps the process alive."""
import threading
import time

__all__ = ["BackgroundCall"]


class BackgroundCall:
    """Run ``fn(*args)`` in a daemon thread of its own, at once.

    The interpreter does not wait for the thread at exit (unlike a ``ThreadPoolExecutor``'s, which
    it joins), so a call stuck on a server that does not answer costs at most the time a caller
    chose to wait with :meth:`wait`.

    Attributes:
        args (tuple): the arguments ``fn`` was called with.
        result: what ``fn`` returned, once :meth:`done`.
        error (BaseException): what ``fn`` raised, or None.
        started (float): ``time.monotonic()`` when it started.

    Example:
        >>> call = BackgroundCall("MLflowMonitor", client.log_batch, run_id, [], metrics)
        >>> if call.wait(5.0) and call.error is None:
        ...     print("sent")
    """

    def __init__(self, name, fn, *args):
        self.args = args
        self.result = None
        self.error = None
        self.started = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fn, args), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn, args):
        try:
            self.result = fn(*args)
        except BaseException as e:  # handed to the caller, which decides what it means
            self.error = e
        finally:
            self._done.set()

    def done(self):
        """Whether the call has returned (or raised)."""
        return self._done.is_set()

    def wait(self, timeout):
        """Wait up to ``timeout`` seconds (None: for ever); return whether the call is done."""
        return self._done.wait(timeout)

    def elapsed(self):
        """Seconds since the call started."""
        return time.monotonic() - self.started
