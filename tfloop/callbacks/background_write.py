"""One write at a time in a thread of its own, and what waits for it."""
import threading

from tfloop.utils import logger

__all__ = ["PendingWrite", "BackgroundWriter"]


class PendingWrite:
    """A write under way: wait for it, or ask for something to run once it succeeded.

    Attributes:
        error (BaseException): what the write raised, or None.

    Example:
        >>> pending = writer.start(write_files)
        >>> pending.then(lambda: print("written"))   # now, or in the writer's thread later
        >>> pending.wait()
    """

    def __init__(self):
        self.error = None
        self._lock = threading.Lock()
        self._finished = False
        self._then = []
        self._done = threading.Event()

    @property
    def done(self):
        """Whether the write and everything that waited for it have finished."""
        return self._done.is_set()

    def then(self, fn):
        """Call ``fn()`` once the write has succeeded: in the writer's thread when it is still
        under way, else now; never when it failed."""
        with self._lock:
            if not self._finished:
                self._then.append(fn)
                return
        if self.error is None:
            fn()

    def wait(self):
        """Wait until the write and what waited for it have finished."""
        self._done.wait()

    def _finish(self, error):
        with self._lock:
            self.error = error
            self._finished = True
            waiting, self._then = self._then, []
        try:
            for fn in waiting if error is None else ():
                try:
                    fn()
                except Exception as e:  # the run goes on: one failed follow-up must not hang it
                    logger.error(f"After writing in the background, {fn} failed: "
                                 f"{type(e).__name__}: {e}.")
        finally:
            self._done.set()


class BackgroundWriter:
    """Run writes in a background thread, one at a time: :meth:`start` waits for the previous
    write to finish first.

    Args:
        name (str): the threads' name.

    Example:
        >>> writer = BackgroundWriter("ModelSaver")
        >>> pending = writer.start(lambda: save_files())
        >>> writer.wait()
    """

    def __init__(self, name):
        self.name = name
        self.pending = None
        self._thread = None

    @property
    def busy(self):
        """Whether a write is under way."""
        return self.pending is not None and not self.pending.done

    def start(self, write):
        """Wait for the write under way, then run ``write()`` in a new thread; returns its
        :class:`PendingWrite`, whose ``error`` is what ``write`` raised."""
        self.wait()
        pending = PendingWrite()

        def run():
            error = None
            try:
                write()
            except BaseException as e:
                error = e
            pending._finish(error)
        self.pending = pending
        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()
        return pending

    def wait(self):
        """Wait until the write under way (if any) has finished."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
