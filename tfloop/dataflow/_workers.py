"""What every parallel runner shares: starting workers, watching them, and shutting them down.

* Workers are forked (the DataFlow and map function need not be picklable), ignore Ctrl-C (the
  consumer handles it and shuts them down), get an RNG stream of their own, and exit by
  themselves within a fraction of a second when their parent process dies.
* A worker's exception travels to the consumer as a :class:`WorkerFailure` and is re-raised
  there with the worker's name and its traceback text.
* The consumer never blocks forever: while waiting it checks that its workers are alive, and
  raises :class:`DataFlowWorkerError` naming a worker that died.
* Every started group is terminated at interpreter exit, when its owner is garbage collected,
  or by ``close()``.
* ZMQ pipes are socket files in a fresh directory only this user can enter (:class:`PipeDir`),
  removed when the group closes: another local user cannot connect to them, so nothing that
  reaches the consumer was sent by a process of someone else.
"""
import atexit
import functools
import multiprocessing as mp
import multiprocessing.util
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import weakref

from tfloop.dataflow.base import DataFlowTerminated
from tfloop.utils import rng
from tfloop.utils.checks import check_int
from tfloop.utils.coerce import tensorpack_int
from tfloop.utils.extras import install_command

__all__ = ["DataFlowWorkerError"]

POLL_SECONDS = 0.5
_CONTEXT = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
_LIVE_GROUPS = weakref.WeakSet()
_EXIT_HOOK_REGISTERED = False


class DataFlowWorkerError(RuntimeError):
    """A worker of a parallel DataFlow died, or raised an exception that could not be re-raised
    as itself."""


class _RemoteTraceback(Exception):
    def __init__(self, text):
        super().__init__(text)
        self.text = text

    def __str__(self):
        return self.text


def dumps(obj) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


loads = pickle.loads


class WorkerFailure:
    """An exception raised in a worker, as a picklable message to the consumer."""

    def __init__(self, worker, exc, during):
        self.worker = worker
        self.during = during
        self.text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.type_name = type(exc).__name__
        self.message = str(exc)
        self.hint = _hint_for(exc)
        try:
            self.exc_bytes = dumps(exc)
            loads(self.exc_bytes)
        except Exception:  # an exception that cannot cross processes: re-raised as a summary
            self.exc_bytes = None

    def to_exception(self) -> BaseException:
        """The worker's exception (or a DataFlowWorkerError when it cannot be rebuilt), its cause
        the worker's traceback, and a note naming the worker."""
        exc = loads(self.exc_bytes) if self.exc_bytes is not None else None
        if not isinstance(exc, BaseException):
            exc = DataFlowWorkerError(f"{self.worker} raised {self.type_name}: {self.message}")
        exc.__cause__ = _RemoteTraceback(
            f'\n"""\nTraceback in {self.worker}, {self.during}:\n{self.text}"""')
        if hasattr(exc, "add_note"):
            exc.add_note(f"Raised in {self.worker} {self.during}.")
            if self.hint:
                exc.add_note(self.hint)
        return exc


def _hint_for(exc):
    """What a worker's exception means when its message alone does not say it."""
    if isinstance(exc, RuntimeError) and "Graph is finalized" in str(exc):
        return ("The worker was forked from the training process and inherits its TensorFlow "
                "graph, which training has finalized, so TF ops cannot be created in a DataFlow "
                "worker. Map with numpy/OpenCV, build the ops in a graph of the function's own "
                "(with tf.Graph().as_default(): ...), or use a tf.data pipeline (DatasetInput).")
    return None


def raise_if_failure(message):
    if isinstance(message, WorkerFailure):
        raise message.to_exception()
    return message


def _describe_exit(code):
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _watch_parent(parent_pid):
    def watch():
        while True:
            time.sleep(0.2)
            if os.getppid() != parent_pid:
                os._exit(1)
    threading.Thread(target=watch, name="tfloop-parent-watchdog", daemon=True).start()


def worker_bootstrap(index, parent_pid):
    """First thing a forked worker does: ignore Ctrl-C, watch the parent, own RNG stream."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The parent's handlers (e.g. a trainer's graceful SIGTERM) are not the worker's to run.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _watch_parent(parent_pid)
    rng.set_worker_index(rng._WORKER_INDEX * 1009 + index + 1)
    rng.reseed_registered()
    _LIVE_GROUPS.clear()  # the parent's groups are not this process's to shut down


def park():
    """After reporting its failure a worker waits to be stopped instead of exiting, so that the
    consumer reads the failure (sent in the background) rather than finding a dead worker."""
    while True:
        time.sleep(3600)


def worker_exit():
    """Last thing a worker does when it stops by itself: shut down the groups it started."""
    _shutdown_all()


# sun_path holds 108 bytes on Linux (104 on macOS and the BSDs), the terminating NUL included.
MAX_SOCKET_PATH = 107 if sys.platform.startswith("linux") else 103
_PIPE_DIR_PREFIX = "tfloop-"
_LONGEST_PIPE = "batches"


class PipeDir:
    """A fresh directory of mode 0700 for the ipc socket files of one worker group.

    Unix sockets obey the permissions of the directories above them, so only this user (and
    root) can connect to a pipe in it; Linux *abstract* addresses (``ipc://@name``) have no
    permissions at all and are listed in ``/proc/net/unix`` for every user, so none is used. The
    directory is made in ``tempfile.gettempdir()``, or in ``/tmp`` when that path is too long for
    a socket; only the process that made it removes it.
    """

    def __init__(self):
        self.path = _make_private_dir()
        self._owner_pid = os.getpid()

    def address(self, kind):
        """The ZMQ address of the pipe ``kind`` (a short name, at most 7 characters)."""
        return f"ipc://{os.path.join(self.path, kind)}"

    def remove(self):
        if os.getpid() == self._owner_pid:
            shutil.rmtree(self.path, ignore_errors=True)


def _socket_path_fits(base):
    longest = os.path.join(base, _PIPE_DIR_PREFIX + "x" * 8, _LONGEST_PIPE)
    return len(os.fsencode(longest)) <= MAX_SOCKET_PATH


def _make_private_dir():
    """``tempfile.mkdtemp`` (mode 0700) in the first temp directory short enough for socket
    paths."""
    candidates = [tempfile.gettempdir(), "/tmp"]
    for base in candidates:
        if _socket_path_fits(base) and os.path.isdir(base):
            return tempfile.mkdtemp(prefix=_PIPE_DIR_PREFIX, dir=base)
    raise OSError(
        f"A parallel DataFlow puts its ZMQ pipes in a private directory of the temp directory, "
        f"but the socket paths in {candidates[0]!r} would be longer than the {MAX_SOCKET_PATH} "
        f"bytes a unix socket path can have, and /tmp is not usable either. Set TMPDIR to a "
        f"shorter directory, e.g. TMPDIR=/tmp.")


def import_zmq(owner):
    try:
        import zmq
    except ImportError:
        raise ImportError(
            f"{owner} needs pyzmq: `pip install pyzmq` (or `{install_command('dataflow')}`). "
            "MultiProcessRunner, MultiThreadRunner and MultiThreadMapData work without it."
        ) from None
    return zmq


def check_hwm(hwm, name):
    """A ZMQ high-water mark: an int >= 0, where 0 is ZMQ's "no limit" (tensorpack passed ``hwm``
    to ZMQ through ``int()``, so ``'50'`` and ``50.0`` are taken too)."""
    return check_int(tensorpack_int(hwm, name), name, at_least=0,
                     note="0: no limit, as in ZMQ")


def _shutdown_all():
    for group in list(_LIVE_GROUPS):
        group.close()


class WorkerGroup:
    """The processes (or threads) of one parallel DataFlow.

    Args:
        owner: the DataFlow; the workers are stopped when it is garbage collected.
        label: the owner's name, used in messages (``"MultiProcessMapData"``).
        make_worker: ``(index, parent_pid) -> Process or Thread`` (not started).
        count: number of workers.
        closers: callables run first on close (closing sockets, setting stop events).
        pipe_dir (PipeDir): the directory of the group's pipes, removed last on close.
    """

    def __init__(self, owner, label, make_worker, count, closers=(), pipe_dir=None):
        global _EXIT_HOOK_REGISTERED
        self.label = label
        self._pipe_dir = pipe_dir
        parent = os.getpid()
        try:
            self.workers = [make_worker(index, parent) for index in range(count)]
        except BaseException:
            if pipe_dir is not None:
                pipe_dir.remove()
            raise
        self._closers = list(closers)
        self._closed = False
        self._last_check = time.monotonic()
        if not _EXIT_HOOK_REGISTERED:
            atexit.register(_shutdown_all)
            _EXIT_HOOK_REGISTERED = True
        _LIVE_GROUPS.add(self)
        weakref.finalize(owner, self.close)

    def name(self, index):
        worker = self.workers[index]
        pid = getattr(worker, "pid", None)
        return f"{self.label} worker {index}" + (f" (pid {pid})" if pid else "")

    def start(self):
        in_main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if in_main else None
        try:
            for worker in self.workers:
                worker.start()
        finally:
            if in_main:
                signal.signal(signal.SIGINT, previous)

    def add_closer(self, close):
        """Run ``close()`` first when the group closes."""
        self._closers.append(close)

    def watch(self):
        """check_alive(), at most every POLL_SECONDS: cheap enough to call for every datapoint,
        so that a dead worker is noticed even while the others keep the data coming."""
        now = time.monotonic()
        if now - self._last_check >= POLL_SECONDS:
            self._last_check = now
            self.check_alive()

    def check_alive(self):
        """Raise DataFlowWorkerError if a worker process has exited."""
        for index, worker in enumerate(self.workers):
            code = getattr(worker, "exitcode", None)
            if code is not None:
                raise DataFlowWorkerError(
                    f"{self.name(index)} {_describe_exit(code)}; {self.label} cannot go on "
                    "(the datapoints it was working on are lost). Check the system log for "
                    "an out-of-memory kill, or run the DataFlow without the parallel runner "
                    "to see its error.")

    def close(self):
        """Stop every worker; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        _LIVE_GROUPS.discard(self)
        for close in self._closers:
            try:
                close()
            except Exception:
                pass
        processes = [w for w in self.workers if isinstance(w, mp.process.BaseProcess)]
        for proc in processes:
            if proc.pid is not None and proc.exitcode is None:
                proc.terminate()
        for proc in processes:
            if proc.pid is not None:
                proc.join(2)
                if proc.exitcode is None:
                    proc.kill()
                    proc.join(1)
        if self._pipe_dir is not None:
            self._pipe_dir.remove()


def fork_process(target, args, name):
    """A forked worker process (not a daemon, so that workers may run parallel DataFlows too)."""
    return _CONTEXT.Process(target=target, args=args, name=name, daemon=False)


def make_queue(maxsize):
    return _CONTEXT.Queue(maxsize)


class ZMQConsumer:
    """The consumer's end of ZMQ pipes to workers: every send and receive first tries without
    blocking, then polls in steps of POLL_SECONDS, checking the workers between steps."""

    def _open(self, zmq, kind, hwm, address):
        """Open the consumer's socket bound to ``address``; the worker group destroys it when it
        closes. Call it after forking: children must not inherit ZMQ descriptors."""
        self._zmq = zmq
        self.context = zmq.Context()
        self.socket = self.context.socket(kind)
        self.socket.set_hwm(hwm)
        self.socket.bind(address)
        self._group.add_closer(functools.partial(self.context.destroy, linger=0))

    def _blocking(self, attempt, flag):
        zmq = self._zmq
        self._group.watch()
        try:
            while True:
                try:
                    return attempt(zmq.NOBLOCK)
                except zmq.Again:
                    while not self.socket.poll(int(POLL_SECONDS * 1000), flag):
                        self._group.check_alive()
        except zmq.ZMQError as e:
            if e.errno in (zmq.ENOTSOCK, zmq.ETERM):
                raise DataFlowTerminated(f"{type(self).__name__} was closed.") from None
            raise

    def _send_parts(self, parts):
        self._blocking(lambda flags: self.socket.send_multipart(parts, flags),
                       self._zmq.POLLOUT)

    def _recv_parts(self):
        return self._blocking(lambda flags: self.socket.recv_multipart(flags),
                              self._zmq.POLLIN)
