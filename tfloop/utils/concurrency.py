"""Threads and processes as tensorpack's ``utils.concurrency`` provides them: stoppable and
looping threads, threads sharing the caller's TensorFlow session, child-process cleanup, and the
helpers code copied from tensorpack imports (``subproc_call``, ``DIE``)."""
import atexit
import ctypes
import ctypes.util
import multiprocessing as mp
import platform
import queue
import signal
import subprocess
import threading
import weakref
from contextlib import contextmanager

from tfloop.utils import logger

__all__ = ["StoppableThread", "LoopThread", "ShareSessionThread", "ensure_proc_terminate",
           "enable_death_signal", "is_main_thread", "mask_sigint", "start_proc_mask_signal"]

_QUEUE_WAIT_S = 5
_PR_SET_PDEATHSIG = 1


class StoppableThread(threading.Thread):
    """A thread with a stop event, and queue operations that give up once it is set.

    Args:
        evt (threading.Event): the stop event (a new one by default).

    Example:
        >>> class Producer(StoppableThread):
        ...     def run(self):
        ...         while not self.stopped():
        ...             self.queue_put_stoppable(q, make_item())
    """

    def __init__(self, evt=None):
        super().__init__()
        self._stop_evt = threading.Event() if evt is None else evt

    def stop(self):
        """Ask the thread to stop (its ``run`` checks :meth:`stopped`)."""
        self._stop_evt.set()

    def stopped(self):
        """Whether :meth:`stop` was called."""
        return self._stop_evt.is_set()

    def queue_put_stoppable(self, q, obj):
        """``q.put(obj)``, waiting for room until it fits or the thread is stopped."""
        while not self.stopped():
            try:
                q.put(obj, timeout=_QUEUE_WAIT_S)
                return
            except queue.Full:
                pass

    def queue_get_stoppable(self, q):
        """``q.get()``, waiting until an item comes (returned) or the thread is stopped (None)."""
        while not self.stopped():
            try:
                return q.get(timeout=_QUEUE_WAIT_S)
            except queue.Empty:
                pass
        return None


class LoopThread(StoppableThread):
    """A daemon thread calling ``func()`` again and again until stopped; pausable.

    Example:
        >>> th = LoopThread(lambda: q.put(simulate_one_step()))
        >>> th.start(); th.pause(); th.resume(); th.stop()
    """

    def __init__(self, func, pausable=True):
        super().__init__()
        self._func = func
        self._pausable = pausable
        self._lock = threading.Lock()
        self.daemon = True

    def run(self):
        while not self.stopped():
            if self._pausable:
                with self._lock:
                    pass
            self._func()

    def _check_pausable(self):
        if not self._pausable:
            raise RuntimeError("LoopThread(pausable=False) cannot be paused or resumed.")

    def pause(self):
        """Block the loop before its next call (until :meth:`resume`)."""
        self._check_pausable()
        self._lock.acquire()

    def resume(self):
        """Let a paused loop go on."""
        self._check_pausable()
        self._lock.release()


class ShareSessionThread(threading.Thread):
    """A thread that runs with the TensorFlow default session of the thread that started it.

    Args:
        th (threading.Thread): a thread whose ``run`` to call inside the session; without it,
            subclass and use ``with self.default_sess():`` in ``run``.

    Example:
        >>> with sess.as_default():
        ...     ShareSessionThread(threading.Thread(target=predict_loop)).start()
    """

    def __init__(self, th=None):
        super().__init__()
        self._th = th
        self._sess = None
        if th is not None:
            if not isinstance(th, threading.Thread):
                raise TypeError(f"ShareSessionThread needs a threading.Thread, got {th!r}.")
            self.name, self.daemon = th.name, th.daemon

    @contextmanager
    def default_sess(self):
        """The starting thread's session as the default one (None, with a warning, if none)."""
        if self._sess is None:
            logger.warning(f"ShareSessionThread {self.name} was not started under a default "
                           f"session.")
            yield None
            return
        with self._sess.as_default():
            yield self._sess

    def start(self):
        from tfloop.compat import tfv1
        self._sess = tfv1.get_default_session()
        super().start()

    def run(self):
        if self._th is None:
            raise NotImplementedError("ShareSessionThread.run: pass a thread, or override run.")
        with self.default_sess():
            self._th.run()


def ensure_proc_terminate(proc):
    """Terminate ``proc`` (a ``multiprocessing.Process`` or a list of them) when this process
    exits, if it is still alive then."""
    if isinstance(proc, list):
        for p in proc:
            ensure_proc_terminate(p)
        return
    if not isinstance(proc, mp.process.BaseProcess):
        raise TypeError(f"ensure_proc_terminate needs a multiprocessing.Process, got {proc!r}.")

    def stop(ref):
        p = ref()
        if p is not None and p.is_alive():
            p.terminate()
            p.join()
    atexit.register(stop, weakref.ref(proc))


def enable_death_signal(_warn=True):
    """Have the kernel send this process SIGHUP when its parent dies (Linux; elsewhere nothing),
    so that a child cannot outlive a killed parent."""
    if platform.system() != "Linux":
        return
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGHUP), 0, 0, 0) != 0 and _warn:
        logger.warning(f"enable_death_signal: prctl failed (errno {ctypes.get_errno()}).")


def is_main_thread():
    """Whether the caller runs in the main thread."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def mask_sigint():
    """In the main thread: ignore SIGINT inside the block and yield True; elsewhere yield False
    (signals can only be set from the main thread)."""
    if not is_main_thread():
        yield False
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield True
    finally:
        signal.signal(signal.SIGINT, previous)


def start_proc_mask_signal(proc):
    """Start ``proc`` (a process or a list) with SIGINT ignored, so that Ctrl-C reaches only the
    main process, which then stops its children (from the main thread only)."""
    with mask_sigint():
        for p in proc if isinstance(proc, list) else [proc]:
            p.start()


class DIE:
    """tensorpack's end-of-queue marker: a producer puts ``(DIE, ...)`` in a queue when it has
    nothing more to send.

    Example:
        >>> results.put((DIE, None))
    """


def subproc_call(cmd, timeout=None):
    """Run the shell command ``cmd`` and return ``(output, exit code)``: its stdout and stderr as
    bytes, and 0, its non-zero exit code (logged), -1 when it ran past ``timeout`` seconds, or -2
    when it could not be started (logged), as tensorpack's does.

    Example:
        >>> output, code = subproc_call("nvidia-smi -L", timeout=5)
    """
    try:
        return subprocess.check_output(cmd, stderr=subprocess.STDOUT, shell=True,
                                       timeout=timeout), 0
    except subprocess.TimeoutExpired as e:
        logger.warning(f"Command {cmd!r} ran past its timeout of {timeout} s.")
        return e.output or b"", -1
    except subprocess.CalledProcessError as e:
        logger.warning(f"Command {cmd!r} failed with exit code {e.returncode}: "
                       f"{e.output.decode('utf-8', 'replace').strip()}")
        return e.output, e.returncode
    except OSError as e:
        logger.warning(f"Command {cmd!r} could not be run: {e}")
        return b"", -2
