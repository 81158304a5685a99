"""Run a whole DataFlow in parallel: in worker processes (a queue or ZMQ pipes) or in threads.

Each worker iterates its own copy of the DataFlow, so with several workers the stream is a mix of
independent passes (duplicates and reordering included): fine for i.i.d. training data. To
parallelize only a map over a fixed stream, use :mod:`tfloop.dataflow.parallel_map`.
"""
import itertools
import os
import queue
import threading

from tfloop.dataflow import _workers
from tfloop.dataflow._workers import (
    WorkerFailure,
    ZMQConsumer,
    check_hwm,
    dumps,
    loads,
    raise_if_failure,
)
from tfloop.dataflow.base import DataFlow, DataFlowReentrantGuard, ProxyDataFlow
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int
from tfloop.utils.coerce import tensorpack_keywords

__all__ = [
    "MultiProcessPrefetchData",
    "MultiProcessRunner",
    "MultiProcessRunnerZMQ",
    "MultiThreadPrefetchData",
    "MultiThreadRunner",
    "PrefetchData",
    "PrefetchDataZMQ",
]


def _length(ds):
    try:
        return len(ds)
    except NotImplementedError:
        return -1


def _note_copies(owner, num_proc):
    if num_proc > 1:
        logger.info(f"{owner}: running {num_proc} copies of the DataFlow; this assumes its "
                    "datapoints are i.i.d.")


def _one_pass(size, get):
    """``get()`` ``size`` times, or forever for a DataFlow of unknown size (-1)."""
    for k in itertools.count():
        if 0 <= size <= k:
            return
        yield get()


def _produce_forever(ds, send, index, label, parent_pid):
    """A runner worker: reset its copy of ``ds`` and send its datapoints until killed."""
    _workers.worker_bootstrap(index, parent_pid)
    name = f"{label} worker {index} (pid {os.getpid()})"
    try:
        ds.reset_state()
        while True:
            for dp in ds:
                send(dumps(dp))
    except Exception as e:
        send(dumps(WorkerFailure(name, e, "while producing datapoints")))
        _workers.park()
    finally:
        _workers.worker_exit()


class ReentrantOnce:
    """Shared ``reset_state`` bookkeeping: a runner forks its workers exactly once."""

    _reset_done = False

    def _mark_reset(self):
        if self._reset_done:
            raise RuntimeError(f"{type(self).__name__}.reset_state() was called twice; it starts "
                               "its workers and must be called exactly once.")
        self._reset_done = True
        self._guard = DataFlowReentrantGuard()

    def _check_reset(self):
        if not self._reset_done:
            raise RuntimeError(f"Call {type(self).__name__}.reset_state() before iterating it.")

    def _fork_workers(self, target, *args, pipe_dir=None):
        """Fork ``self.num_proc`` workers; worker ``i`` runs ``target(*args, i, label, parent
        pid)``. ``pipe_dir`` (a :class:`~tfloop.dataflow._workers.PipeDir`) is removed when the
        workers are stopped."""
        label = type(self).__name__

        def make(index, parent):
            return _workers.fork_process(target, (*args, index, label, parent),
                                         name=f"{label}-{index}")
        self._group = _workers.WorkerGroup(self, label, make, self.num_proc, pipe_dir=pipe_dir)
        self._group.start()

    def close(self):
        """Stop the workers now (they also stop at exit and when this DataFlow is collected)."""
        group = getattr(self, "_group", None)
        if group is not None:
            group.close()


class MultiProcessRunner(ReentrantOnce, ProxyDataFlow):
    """Runs ``ds`` in ``num_proc`` forked processes, collected through a multiprocessing queue.

    Each process iterates its own copy of ``ds`` (reset there, so RNGs differ) forever; one pass
    of this DataFlow takes ``len(ds)`` datapoints from the queue. With ``num_proc=1`` the order is
    that of ``ds``. Works without pyzmq.

    Example:
        >>> from tfloop.dataflow import FakeData
        >>> df = MultiProcessRunner(FakeData([[2]], size=10), num_prefetch=4, num_proc=2)
        >>> df.reset_state(); len(list(df))
        10
        >>> df.close()
    """

    @tensorpack_keywords(nr_prefetch="num_prefetch", nr_proc="num_proc")
    def __init__(self, ds, num_prefetch, num_proc):
        """
        Args:
            ds (DataFlow): the DataFlow to run.
            num_prefetch (int): capacity of the queue of datapoints.
            num_proc (int): number of processes.
        """
        super().__init__(ds)
        self.num_prefetch = check_positive_int(num_prefetch, "MultiProcessRunner: num_prefetch")
        self.num_proc = check_positive_int(num_proc, "MultiProcessRunner: num_proc")
        self._size = _length(ds)
        _note_copies("MultiProcessRunner", num_proc)

    def reset_state(self):
        self._mark_reset()
        self.queue = _workers.make_queue(self.num_prefetch)
        self._fork_workers(_produce_forever, self.ds, self.queue.put)

    def _get(self):
        self._group.watch()
        while True:
            try:
                return raise_if_failure(loads(self.queue.get(timeout=_workers.POLL_SECONDS)))
            except queue.Empty:
                self._group.check_alive()

    def __iter__(self):
        self._check_reset()
        with self._guard:
            yield from _one_pass(self._size, self._get)


class MultiProcessRunnerZMQ(ZMQConsumer, ReentrantOnce, DataFlow):
    """Runs ``ds`` in ``num_proc`` forked processes that send datapoints over ZMQ pipes: usually
    faster than :class:`MultiProcessRunner`. Needs pyzmq.

    The processes are forked in ``reset_state()``. Each iterates its own copy of ``ds`` forever
    (so with ``num_proc > 1``, expect duplicates and reordering); a pass of this DataFlow takes
    ``len(ds)`` datapoints. A worker's exception is re-raised here with its traceback; a worker
    that dies raises :class:`~tfloop.dataflow.DataFlowWorkerError` instead of hanging.

    Example:
        >>> from tfloop.dataflow import FakeData
        >>> df = MultiProcessRunnerZMQ(FakeData([[2]], size=10), num_proc=2)
        >>> df.reset_state(); len(list(df))
        10
        >>> df.close()
    """

    @tensorpack_keywords(nr_proc="num_proc")
    def __init__(self, ds, num_proc=1, hwm=50):
        """
        Args:
            ds (DataFlow): the DataFlow to run.
            num_proc (int): number of processes.
            hwm (int): ZMQ high-water mark: datapoints queued per pipe end (0: no limit).
        """
        self.ds = ds
        self.num_proc = check_positive_int(num_proc, "MultiProcessRunnerZMQ: num_proc")
        self._hwm = check_hwm(hwm, "MultiProcessRunnerZMQ: hwm")
        self._size = _length(ds)
        _note_copies("MultiProcessRunnerZMQ", num_proc)

    def __len__(self):
        return len(self.ds)

    def reset_state(self):
        zmq = _workers.import_zmq(type(self).__name__)
        self._mark_reset()
        pipes = _workers.PipeDir()
        address = pipes.address("runner")
        self._fork_workers(_zmq_producer, self.ds, address, self._hwm, pipe_dir=pipes)
        self._open(zmq, zmq.PULL, self._hwm, address)

    def _recv(self):
        return raise_if_failure(loads(self._recv_parts()[0]))

    def __iter__(self):
        self._check_reset()
        with self._guard:
            yield from _one_pass(self._size, self._recv)


def _zmq_producer(ds, address, hwm, index, label, parent_pid):
    import zmq
    context = zmq.Context()
    socket = context.socket(zmq.PUSH)
    socket.set_hwm(hwm)
    socket.connect(address)
    try:
        _produce_forever(ds, socket.send, index, label, parent_pid)
    finally:
        socket.close(linger=5000)
        context.term()


class MultiThreadRunner(DataFlow):
    """Runs ``num_thread`` DataFlows (one per thread, made by ``get_df``) into one queue.

    Threads share the GIL: this helps when the DataFlow waits on I/O or on code that releases
    the GIL (numpy, OpenCV). An exception in a thread is re-raised here with its traceback.

    Example:
        >>> from tfloop.dataflow import FakeData
        >>> df = MultiThreadRunner(lambda: FakeData([[2]], size=10), num_prefetch=4, num_thread=2)
        >>> df.reset_state(); len(list(df))
        10
    """

    @tensorpack_keywords(nr_prefetch="num_prefetch", nr_thread="num_thread")
    def __init__(self, get_df, num_prefetch, num_thread):
        """
        Args:
            get_df: a callable returning a new DataFlow; called once per thread.
            num_prefetch (int): capacity of the queue.
            num_thread (int): number of threads.
        """
        if not callable(get_df):
            raise TypeError(f"MultiThreadRunner needs get_df, a function returning a DataFlow; "
                            f"got {get_df!r}.")
        self.num_thread = check_positive_int(num_thread, "MultiThreadRunner: num_thread")
        check_positive_int(num_prefetch, "MultiThreadRunner: num_prefetch")
        self.queue = queue.Queue(maxsize=num_prefetch)
        self._stop = threading.Event()
        self.dataflows = [get_df() for _ in range(num_thread)]
        for df in self.dataflows:
            if not isinstance(df, DataFlow):
                raise TypeError(f"MultiThreadRunner: get_df() must return a DataFlow, got {df!r}.")
        self.threads = [threading.Thread(target=self._produce, args=(k, df), daemon=True,
                                         name=f"MultiThreadRunner-{k}")
                        for k, df in enumerate(self.dataflows)]
        self._size = _length(self.dataflows[0])
        self._started = False

    def _put(self, item):
        while not self._stop.is_set():
            try:
                self.queue.put(item, timeout=_workers.POLL_SECONDS)
                return
            except queue.Full:
                continue

    def _produce(self, index, df):
        try:
            while not self._stop.is_set():
                for dp in df:
                    if self._stop.is_set():
                        return
                    self._put(dp)
        except Exception as e:
            self._put(WorkerFailure(f"MultiThreadRunner thread {index}", e,
                                    "while producing datapoints"))

    def reset_state(self):
        if self._started:
            raise RuntimeError("MultiThreadRunner.reset_state() was called twice; it starts its "
                               "threads and must be called exactly once.")
        self._started = True
        for df, thread in zip(self.dataflows, self.threads):
            df.reset_state()
            thread.start()

    def __len__(self):
        return len(self.dataflows[0])

    def __iter__(self):
        if not self._started:
            raise RuntimeError("Call MultiThreadRunner.reset_state() before iterating it.")
        yield from _one_pass(self._size, lambda: raise_if_failure(self.queue.get()))

    def close(self):
        """Ask the threads to stop (they are daemon threads, and stop at exit anyway)."""
        self._stop.set()

    def __del__(self):
        self._stop.set()


PrefetchData = MultiProcessRunner
MultiProcessPrefetchData = MultiProcessRunner
PrefetchDataZMQ = MultiProcessRunnerZMQ
MultiThreadPrefetchData = MultiThreadRunner
