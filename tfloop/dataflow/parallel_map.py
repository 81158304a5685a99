"""Parallel versions of :class:`~tfloop.dataflow.MapData`: the source is iterated once, in the
consuming process, and only the map function runs in worker threads or processes.

``strict=False`` (the default, as in tensorpack): an endless stream; datapoints of one pass may
mix with the next, and arrive in any order. ``strict=True``: each pass produces exactly what
``MapData(ds, map_func)`` produces, **in the same order** (results are reordered as they come
back), and stops at the end of ``ds``.
"""
import contextlib
import itertools
import os
import queue
import threading

from tfloop.dataflow import _workers
from tfloop.dataflow._workers import WorkerFailure, ZMQConsumer, dumps, loads, raise_if_failure
from tfloop.dataflow.base import DataFlow, ProxyDataFlow
from tfloop.dataflow.batch import BatchData
from tfloop.dataflow.common import RepeatedData
from tfloop.dataflow.parallel import ReentrantOnce
from tfloop.utils.checks import check_callable, check_positive_int
from tfloop.utils.coerce import tensorpack_keywords

__all__ = [
    "MultiProcessMapAndBatchData",
    "MultiProcessMapAndBatchDataZMQ",
    "MultiProcessMapData",
    "MultiProcessMapDataZMQ",
    "MultiThreadMapData",
]


def _datapoint_bytes(dp):
    """The bytes of the numpy arrays and bytes in a datapoint (lists, tuples and dicts walked)."""
    if isinstance(dp, (list, tuple)):
        return sum(_datapoint_bytes(c) for c in dp)
    if isinstance(dp, dict):
        return sum(_datapoint_bytes(c) for c in dp.values())
    if isinstance(dp, (bytes, bytearray)):
        return len(dp)
    return int(getattr(dp, "nbytes", 0) or 0)


class _ParallelMapData(ReentrantOnce, ProxyDataFlow):
    """Sends ``(sequence number, datapoint)`` to workers, keeping up to ``buffer_size`` in flight.

    The window of datapoints in flight starts at two per worker and grows by one with each result,
    so the first results come back at once instead of after ``buffer_size`` datapoints were read;
    it never holds more than about :attr:`MAX_BUFFER_BYTES` of mapped results (measured on the
    results so far), nor fewer than one datapoint per worker.
    """

    MAX_BUFFER_BYTES = 1 << 30

    def __init__(self, ds, num_workers, map_func, buffer_size, strict):
        super().__init__(ds)
        owner = type(self).__name__
        self.map_func = check_callable(map_func, f"{owner}: map_func")
        self._num_workers = check_positive_int(num_workers, f"{owner}: number of workers")
        self._buffer_size = check_positive_int(buffer_size, f"{owner}: buffer_size")
        if strict:
            try:
                self._buffer_size = min(self._buffer_size, len(ds))
            except NotImplementedError:
                pass
        self._strict = strict

    def reset_state(self):
        self._mark_reset()
        super().reset_state()
        self._next_seq = 0
        self._in_flight = 0
        self._window = min(self._buffer_size, 2 * self._num_workers)
        self._largest_result = 0
        self._endless = None if self._strict else iter(RepeatedData(self.ds, -1))
        self._start_workers()

    def _send_from(self, itr, count):
        sent = 0
        for dp in itertools.islice(itr, count):
            self._send(self._next_seq, dp)
            self._next_seq += 1
            self._in_flight += 1
            sent += 1
        return sent

    def _receive(self):
        seq, result = self._recv()
        self._in_flight -= 1
        result = raise_if_failure(result)
        self._largest_result = max(self._largest_result, _datapoint_bytes(result))
        by_memory = self.MAX_BUFFER_BYTES // max(1, self._largest_result)
        self._window = max(self._num_workers,
                           min(self._buffer_size, self._window + 1, by_memory))
        return seq, result

    def _top_up(self, itr):
        """Send datapoints of ``itr`` until the window is full; the number sent."""
        return self._send_from(itr, max(0, self._window - self._in_flight))

    def _iter_endless(self):
        while True:
            self._top_up(self._endless)
            _, result = self._receive()
            if result is not None:
                yield result

    def _iter_ordered(self):
        while self._in_flight:  # results of a pass that was abandoned
            self._receive()
        itr = iter(self.ds)
        expected = self._next_seq
        pending = {}
        self._top_up(itr)
        while self._in_flight:
            seq, result = self._receive()
            self._top_up(itr)
            pending[seq] = result
            while expected in pending:
                result = pending.pop(expected)
                expected += 1
                if result is not None:
                    yield result

    def __iter__(self):
        self._check_reset()
        with self._guard:
            yield from (self._iter_ordered() if self._strict else self._iter_endless())


class MultiThreadMapData(_ParallelMapData):
    """:class:`~tfloop.dataflow.MapData` with ``map_func`` run in ``num_thread`` threads.

    Useful when ``map_func`` releases the GIL (I/O, numpy, OpenCV). ``strict=True`` keeps the
    order of ``ds`` and stops after one pass; otherwise the stream is endless and unordered.
    An exception in ``map_func`` is re-raised here, with the thread's traceback.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = MultiThreadMapData(DataFromList([[i] for i in range(5)], shuffle=False), 2,
        ...                         lambda dp: [dp[0] * 10], strict=True)
        >>> df.reset_state(); list(df)
        [[0], [10], [20], [30], [40]]
    """

    @tensorpack_keywords(nr_thread="num_thread")
    def __init__(self, ds, num_thread=None, map_func=None, *, buffer_size=200, strict=False):
        """``num_thread`` threads; the other arguments as in :class:`MultiProcessMapDataZMQ`."""
        super().__init__(ds, num_thread, map_func, buffer_size, strict)
        self.num_thread = num_thread

    def _start_workers(self):
        self._in_queue, self._out_queue = queue.Queue(), queue.Queue()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._work, args=(k,), daemon=True,
                                          name=f"MultiThreadMapData-{k}")
                         for k in range(self.num_thread)]
        for thread in self._threads:
            thread.start()

    def _work(self, index):
        while not self._stop.is_set():
            try:
                seq, dp = self._in_queue.get(timeout=_workers.POLL_SECONDS)
            except queue.Empty:
                continue
            try:
                result = self.map_func(dp)
            except Exception as e:
                result = WorkerFailure(f"MultiThreadMapData thread {index}", e,
                                       "while mapping a datapoint")
            self._out_queue.put((seq, result))

    def _send(self, seq, dp):
        self._in_queue.put((seq, dp))

    def _recv(self):
        return self._out_queue.get()

    def close(self):
        """Stop the threads (daemon threads, which also stop at exit)."""
        stop = getattr(self, "_stop", None)
        if stop is not None:
            stop.set()

    def __del__(self):
        self.close()


def _map_worker(map_func, address, hwm, index, label, parent_pid):
    import zmq
    _workers.worker_bootstrap(index, parent_pid)
    name = f"{label} worker {index} (pid {os.getpid()})"
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.set_hwm(hwm)
    socket.connect(address)
    socket.send(dumps(index))  # ready: the consumer waits for every worker
    try:
        while True:
            seq, dp = loads(socket.recv())
            try:
                reply = dumps((seq, map_func(dp)))
            except Exception as e:
                reply = dumps((seq, WorkerFailure(name, e, "while mapping a datapoint")))
            socket.send(reply)
    finally:
        socket.close(0)
        context.term()
        _workers.worker_exit()


class MultiProcessMapDataZMQ(ZMQConsumer, _ParallelMapData):
    """:class:`~tfloop.dataflow.MapData` with ``map_func`` run in ``num_proc`` forked processes,
    talking over ZMQ pipes: for map functions that hold the GIL (pure-Python decoding,
    augmentation). Needs pyzmq.

    ``ds`` is iterated here; only ``map_func`` runs in the workers. ``strict=True`` produces
    exactly ``MapData(ds, map_func)`` (same order) per pass; otherwise the stream is endless and
    unordered. A worker's exception is re-raised here with its traceback; a killed worker raises
    :class:`~tfloop.dataflow.DataFlowWorkerError` instead of hanging.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = MultiProcessMapDataZMQ(DataFromList([[i] for i in range(5)], shuffle=False), 2,
        ...                             lambda dp: [dp[0] * 10], strict=True)
        >>> df.reset_state(); list(df)
        [[0], [10], [20], [30], [40]]
        >>> df.close()
    """

    @tensorpack_keywords(nr_proc="num_proc")
    def __init__(self, ds, num_proc=None, map_func=None, *, buffer_size=200, strict=False):
        """
        Args:
            ds (DataFlow): the input.
            num_proc (int): number of processes.
            map_func: datapoint -> datapoint, or None to drop it.
            buffer_size (int): the most datapoints in flight (the window starts at two per
                worker and grows; see MAX_BUFFER_BYTES).
            strict (bool): one ordered pass per iteration (see the module notes).
        """
        super().__init__(ds, num_proc, map_func, buffer_size, strict)
        self.num_proc = num_proc

    def _start_workers(self):
        zmq = _workers.import_zmq(type(self).__name__)
        pipes = _workers.PipeDir()
        address = pipes.address("map")
        worker_hwm = max(2, self._buffer_size * 2 // self.num_proc)
        self._fork_workers(_map_worker, self.map_func, address, worker_hwm, pipe_dir=pipes)
        self._open(zmq, zmq.DEALER, self._buffer_size * 2, address)
        for _ in range(self.num_proc):  # every worker connected, so work is spread from the start
            self._recv()

    def _send(self, seq, dp):
        self._send_parts([dumps((seq, dp))])

    def _recv(self):
        return loads(self._recv_parts()[0])


@contextlib.contextmanager
def _failure_sent(results, name, doing):
    """Send an exception of the block to the consumer as a WorkerFailure, then wait to be
    stopped (the consumer re-raises it)."""
    try:
        yield
    except Exception as e:
        results.send(dumps(WorkerFailure(name, e, doing)))
        _workers.park()


def _close_pipeline_worker(context, jobs, results):
    jobs.close(0)
    results.close(linger=5000)  # the failure or last batch still reaches the consumer
    context.term()
    _workers.worker_exit()


def _dispatch(ds, job_address, result_address, hwm, label, parent_pid):
    import zmq
    _workers.worker_bootstrap(0, parent_pid)
    context = zmq.Context()
    jobs, results = context.socket(zmq.PUSH), context.socket(zmq.PUSH)
    jobs.set_hwm(hwm)
    jobs.bind(job_address)
    results.connect(result_address)
    name = f"{label} dispatcher (pid {os.getpid()})"
    try:
        with _failure_sent(results, name, "while producing datapoints"):
            ds.reset_state()
            for dp in RepeatedData(ds, -1):
                jobs.send(dumps(dp), copy=False)
    finally:
        _close_pipeline_worker(context, jobs, results)


def _map_and_batch(map_func, batch_size, job_address, result_address, hwm, index, label,
                   parent_pid):
    import zmq
    _workers.worker_bootstrap(index + 1, parent_pid)
    name = f"{label} worker {index} (pid {os.getpid()})"
    context = zmq.Context()
    jobs, results = context.socket(zmq.PULL), context.socket(zmq.PUSH)
    jobs.set_hwm(hwm * batch_size)
    jobs.connect(job_address)
    results.set_hwm(max(hwm, 5))
    results.connect(result_address)
    batch = []
    try:
        with _failure_sent(results, name, "while mapping or batching"):
            while True:
                dp = map_func(loads(jobs.recv(copy=False)))
                if dp is not None:
                    batch.append(dp)
                if len(batch) == batch_size:
                    results.send(dumps(BatchData.aggregate_batch(batch)), copy=False)
                    batch = []
    finally:
        _close_pipeline_worker(context, jobs, results)


class MultiProcessMapAndBatchDataZMQ(ZMQConsumer, ReentrantOnce, DataFlow):
    """Like ``BatchData(MultiProcessMapData(ds, num_proc, map_func), batch_size)``, but each
    worker also batches, so batching runs in parallel too. Endless; with ``num_proc > 1`` a
    batch may hold datapoints of any order or pass. Needs pyzmq.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = MultiProcessMapAndBatchDataZMQ(DataFromList([[i] for i in range(8)]), 2,
        ...                                     lambda dp: [dp[0] * 2], batch_size=4)
        >>> df.reset_state(); next(iter(df))[0].shape
        (4,)
        >>> df.close()
    """

    def __init__(self, ds, num_proc, map_func, batch_size, buffer_size=None):
        """
        Args:
            ds (DataFlow): the input; iterated in a dispatcher process.
            num_proc (int): number of mapping processes.
            map_func: datapoint -> datapoint, or None to drop it.
            batch_size (int): datapoints per batch.
            buffer_size (int): datapoints (not batches) in flight; ``batch_size * 10`` by default.
        """
        check_callable(map_func, "MultiProcessMapAndBatchData: map_func")
        self.ds = ds
        self.num_proc = check_positive_int(num_proc, "MultiProcessMapAndBatchData: num_proc")
        self.map_func = map_func
        self.batch_size = check_positive_int(batch_size,
                                             "MultiProcessMapAndBatchData: batch_size")
        self.buffer_size = batch_size * 10 if buffer_size is None else buffer_size
        if self.buffer_size <= batch_size:
            raise ValueError(f"MultiProcessMapAndBatchData: buffer_size={self.buffer_size} must "
                             f"be larger than batch_size={batch_size}.")

    def __len__(self):
        return len(self.ds) // self.batch_size

    def reset_state(self):
        zmq = _workers.import_zmq(type(self).__name__)
        self._mark_reset()
        pipes = _workers.PipeDir()
        job_address, result_address = pipes.address("jobs"), pipes.address("batches")
        label, func, batch = type(self).__name__, self.map_func, self.batch_size
        worker_hwm = max(3, self.buffer_size // self.num_proc // self.batch_size)
        ds, buffer_size = self.ds, self.buffer_size

        def make(index, parent):
            if index == self.num_proc:
                return _workers.fork_process(
                    _dispatch, (ds, job_address, result_address, buffer_size, label, parent),
                    name=f"{label}-dispatcher")
            return _workers.fork_process(
                _map_and_batch,
                (func, batch, job_address, result_address, worker_hwm, index, label, parent),
                name=f"{label}-{index}")
        self._group = _workers.WorkerGroup(self, label, make, self.num_proc + 1, pipe_dir=pipes)
        self._group.start()
        self._open(zmq, zmq.PULL, max(5, self.buffer_size // self.batch_size), result_address)

    def __iter__(self):
        self._check_reset()
        with self._guard:
            while True:
                yield raise_if_failure(loads(self._recv_parts()[0]))


MultiProcessMapData = MultiProcessMapDataZMQ
MultiProcessMapAndBatchData = MultiProcessMapAndBatchDataZMQ
