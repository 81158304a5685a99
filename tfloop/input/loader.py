"""Reading datapoints from Python data: passes over a re-iterable, positions, a loader thread.

Shared by :class:`~tfloop.input.feed.FeedInput` (which reads in the training thread) and
:class:`~tfloop.input.queue.QueueInput` (which reads in a :class:`LoaderThread`). ``data`` is
anything iterable again and again: a list, a tensorpack-style DataFlow (``__iter__``,
``__len__``, ``reset_state()``), or any object with ``__iter__``; DataFlows are recognised by
duck typing, without importing :mod:`tfloop.dataflow`.
"""
import collections
import threading
import time

import numpy as np

from tfloop.input.base import check_same_batch_size, check_value_matches_spec, reads_as_batched
from tfloop.input.passes import in_whole_groups
from tfloop.utils import logger

__all__ = ["LoaderThread", "StopWaiting", "check_iterable", "close_data", "component_plan",
           "data_length", "datapoint_components", "iter_datapoints", "ready_components",
           "reset_data", "PASS_END"]

# What iter_datapoints(mark_ends=True) yields in place of a datapoint after each pass.
PASS_END = object()


def check_iterable(data, owner):
    """Raise a TypeError naming ``owner`` unless ``data`` can be iterated."""
    try:
        iter_fn = type(data).__iter__
    except AttributeError:
        raise TypeError(f"{owner} needs an iterable of datapoints (a list, a DataFlow, or an "
                        f"object with __iter__), got {data!r}.") from None
    if not callable(iter_fn):
        raise TypeError(f"{owner} needs an iterable of datapoints, got {data!r}.")
    return data


def data_length(data):
    """``len(data)``, or None when it has no length (``TypeError``/``NotImplementedError``)."""
    try:
        return len(data)
    except (TypeError, NotImplementedError):
        return None


def reset_data(data):
    """Call ``data.reset_state()`` when the data has one (a DataFlow must be reset once before
    it is iterated)."""
    reset = getattr(data, "reset_state", None)
    if callable(reset):
        reset()


def close_data(data, owner):
    """Call ``data.close()`` when the data is a DataFlow (it has ``reset_state``) with a
    ``close``: the input source that reset it, starting its worker threads or processes, stops
    them at the end of training. An error is logged, not raised."""
    close = getattr(data, "close", None)
    if not (callable(close) and callable(getattr(data, "reset_state", None))):
        return
    try:
        close()
    except Exception as e:
        logger.warning(f"{owner}: closing its data failed: {type(e).__name__}: {e}")


def iter_datapoints(data, owner, start_index=0, repeat=True, mark_ends=False):
    """Yield ``(pass_num, index, datapoint)`` over passes of ``data``.

    Args:
        data: a re-iterable of datapoints.
        owner (str): the input source, for error messages.
        start_index (int): skip this many datapoints of the first pass (a resumed run); a pass
            shorter than that ends the skipping, and the next pass starts from its beginning.
        repeat (bool): iterate ``data`` again when it runs out; otherwise stop after one pass.
        mark_ends (bool): after each pass, yield ``(pass_num, <its length>, PASS_END)``.

    Raises:
        ValueError: a pass yields nothing (empty data, or a one-shot generator that ran out).

    A first full pass shorter than ``len(data)`` is warned about once.
    """
    pass_num = 0
    total = 0
    skip = start_index
    while True:
        index = -1
        for index, dp in enumerate(data):
            if index < skip:
                continue
            total += 1
            yield pass_num, index, dp
        if pass_num == 0:
            _warn_if_shorter_than_len(data, owner, index + 1)
        if mark_ends:
            yield pass_num, index + 1, PASS_END
        skip = 0
        if not repeat:
            return
        if index < 0:
            raise _empty_pass_error(owner, total)
        pass_num += 1


def _warn_if_shorter_than_len(data, owner, count):
    """Warn when a full pass of ``count`` datapoints is shorter than ``len(data)``."""
    length = data_length(data)
    if length is not None and count < length:
        logger.warning(f"{owner}: len(data) is {length}, but a pass over the data yielded only "
                       f"{count} datapoint(s); epochs (steps_per_epoch defaults to len(data)) do "
                       f"not match passes. Make __len__ return what __iter__ yields.")


def _empty_pass_error(owner, total):
    if total == 0:
        return ValueError(f"{owner}'s data yields no datapoint: it is empty. Give it at least one "
                          f"datapoint (check the path or the filter that produced it).")
    return ValueError(
        f"{owner}'s data ran out after {total} datapoints and yields nothing when iterated "
        f"again: pass a re-iterable (a list, or an object with __iter__) instead of a "
        f"one-shot generator.")


def datapoint_components(dp, signature, where):
    """The components of datapoint ``dp`` as numpy arrays, in the order of ``signature``.

    ``dp`` is a list/tuple with one component per input, or a dict keyed by input name; each
    component is checked against its ``tf.TensorSpec``. ``where`` (e.g. ``"FeedInput datapoint
    3"``) starts every error message.
    """
    if isinstance(dp, dict):
        missing = [s.name for s in signature if s.name not in dp]
        if missing:
            raise ValueError(f"{where} is a dict with keys {sorted(dp)} but inputs() needs "
                             f"{missing}.")
        dp = [dp[s.name] for s in signature]
    elif not isinstance(dp, (list, tuple)) or len(dp) != len(signature):
        got = (f"{len(dp)} component(s)" if isinstance(dp, (list, tuple))
               else type(dp).__name__)
        raise ValueError(f"{where} must be a list of {len(signature)} components (one per "
                         f"input), got {got}.")
    components = [np.asarray(check_value_matches_spec(v, s, where), dtype=s.dtype.as_numpy_dtype)
                  for v, s in zip(dp, signature)]
    check_same_batch_size([c.shape for c in components], signature, where)
    return components


def component_plan(signature):
    """What :func:`ready_components` compares a datapoint with, for each ``tf.TensorSpec`` of
    ``signature``: its numpy dtype, its dimensions (None when the rank is unknown) and whether it
    reads as a batch."""
    return [(np.dtype(s.dtype.as_numpy_dtype),
             None if s.shape.rank is None else tuple(s.shape.as_list()), reads_as_batched(s))
            for s in signature]


def ready_components(dp, plan):
    """``list(dp)`` when ``dp`` is a list/tuple of numpy arrays of exactly the dtypes and shapes
    of ``plan`` (:func:`component_plan`), with one batch size; otherwise None, and
    :func:`datapoint_components` casts, checks and names what is wrong. The loader thread's
    check of a well-formed datapoint, without the work of a message it does not need.

    Example:
        >>> components = ready_components(dp, plan) or datapoint_components(dp, specs, where)
    """
    if type(dp) not in (list, tuple) or len(dp) != len(plan):
        return None
    batch = None
    for value, (dtype, dims, batched) in zip(dp, plan):
        if type(value) is not np.ndarray or value.dtype != dtype:
            return None
        shape = value.shape
        if dims is not None and (len(shape) != len(dims) or any(
                d is not None and d != n for d, n in zip(dims, shape))):
            return None
        if batched:
            if batch is None:
                batch = shape[0]
            elif shape[0] != batch:
                return None
    return list(dp)


class LoaderThread(threading.Thread):
    """A daemon thread that reads datapoints, prepares each, and buffers it or hands it to
    ``put``; the training thread takes them with :meth:`take` (or :meth:`reserve`).

    It counts what it produced and what the training thread reserved, records where each pass of
    the data starts (so the position of the next datapoint to train can be named for a resumed
    run), and keeps the first exception of the data, of ``prepare`` or of ``put`` with a note
    naming the datapoint, to be re-raised by :meth:`reserve` in the training thread.

    Args:
        data: a re-iterable of datapoints.
        owner (str): the input source, for messages and the thread's name.
        prepare (callable): ``prepare(datapoint, index)`` -> what is buffered or put.
        put (callable): ``put(prepared)``, e.g. an enqueue into a TensorFlow queue (may block
            while it is full). Without it, prepared datapoints wait in a buffer of ``capacity``.
        capacity (int): the buffer's size, when there is no ``put``.
        start_index (int): skip this many datapoints of the first pass.
        stop_errors (tuple): exception types ``put`` raises once its queue is closed; they end
            the thread quietly when a stop was asked.
        pass_groups (int): when given, each pass is cut to whole groups of this many datapoints
            (one training step's) and each is put as ``(prepared, last)``, ``last`` true for the
            final datapoint of its pass (epochs that are passes over data of unknown length;
            see :func:`~tfloop.input.passes.in_whole_groups`).

    Example:
        >>> thread = LoaderThread(batches, "QueueInput", prepare=check, capacity=50)
        >>> thread.start()
        >>> items, waited = thread.take(1, should_stop=lambda: False)   # in the training thread
    """

    POLL_S = 0.05

    def __init__(self, data, owner, prepare, put=None, capacity=None, start_index=0,
                 stop_errors=(), pass_groups=None):
        super().__init__(name=f"{owner} loader", daemon=True)
        self._data = data
        self._owner = owner
        self._prepare = prepare
        self._put = put if put is not None else self._append
        self._buffer = collections.deque()
        self._capacity = capacity
        self._stop_errors = tuple(stop_errors)
        self._stop_event = threading.Event()
        self._cond = threading.Condition()
        self.start_index = start_index
        self.produced = 0
        self.reserved = 0
        self.error = None
        self._pass_starts = []
        self._where = (0, start_index)
        self._pass_groups = pass_groups

    def _prepared(self, datapoints):
        for pass_num, index, dp in datapoints:
            if dp is not PASS_END:
                # The datapoint being prepared (or, below, put or read): named in an error's note.
                self._where = (pass_num, index)
                dp = self._prepare(dp, index)
                self._where = (pass_num, index + 1)
            yield pass_num, index, dp

    def run(self):
        groups = self._pass_groups
        datapoints = iter_datapoints(self._data, self._owner, self.start_index,
                                     mark_ends=groups is not None)
        items = self._prepared(datapoints)
        if groups is not None:
            items = in_whole_groups(items, groups, PASS_END)
        try:
            for pass_num, index, item in items:
                if self._stop_event.is_set():
                    break
                if index == (self.start_index if pass_num == 0 else 0):
                    self._pass_starts.append((self.produced, pass_num, index))
                read, self._where = self._where, (pass_num, index)
                self._put(item)
                with self._cond:
                    self.produced += 1
                    self._cond.notify_all()
                self._where = read
        except StopWaiting:
            pass
        except BaseException as e:
            if not (self._stop_event.is_set() and isinstance(e, self._stop_errors)):
                self._fail(e)
        finally:
            datapoints.close()
            with self._cond:
                self._cond.notify_all()

    def _append(self, item):
        with self._cond:
            while len(self._buffer) >= self._capacity:
                if self._stop_event.is_set():
                    raise StopWaiting()
                self._cond.wait(self.POLL_S)
            self._buffer.append(item)

    def _fail(self, error):
        pass_num, index = self._where
        error.add_note(f"raised in {self._owner}'s loader thread at datapoint {index} of pass "
                       f"{pass_num} of the data ({self.produced} datapoints were queued before it)")
        with self._cond:
            self.error = error
            self._cond.notify_all()

    @property
    def queued(self):
        """Datapoints put and not yet reserved."""
        return self.produced - self.reserved

    def reserve(self, count, should_stop):
        """Wait until ``count`` datapoints were put that nobody reserved, and reserve them.

        Returns:
            float: the seconds spent waiting.

        Raises:
            the loader's exception (with its traceback and a note naming the datapoint);
            ``StopWaiting`` when ``should_stop()`` turns true while waiting.
        """
        if self.produced - self.reserved >= count:
            self.reserved += count
            return 0.0
        start = time.perf_counter()
        with self._cond:
            while self.produced - self.reserved < count:
                if self.error is not None:
                    raise self.error
                if not self.is_alive():
                    raise RuntimeError(f"{self._owner}'s loader thread ended without an error "
                                       f"after {self.produced} datapoints.")
                if should_stop():
                    raise StopWaiting()
                self._cond.wait(self.POLL_S)
            self.reserved += count
        return time.perf_counter() - start

    def take(self, count, should_stop):
        """:meth:`reserve` ``count`` buffered datapoints and take them out of the buffer.

        Returns:
            tuple: the list of prepared datapoints, and the seconds spent waiting.
        """
        waited = self.reserve(count, should_stop)
        buffer = self._buffer
        items = [buffer.popleft() for _ in range(count)]
        with self._cond:
            self._cond.notify_all()
        return items, waited

    def position(self, consumed):
        """``(pass_num, index)`` of the datapoint a run resumed after ``consumed`` datapoints
        continues from: the ``consumed``-th datapoint this thread put (counting from 0)."""
        start = (0, 0, self.start_index)
        for entry in self._pass_starts:
            if entry[0] <= consumed:
                start = entry
        produced_at_start, pass_num, index = start
        return pass_num, index + consumed - produced_at_start

    def stop(self, timeout):
        """Ask the thread to stop; wait up to ``timeout`` seconds. Returns whether it ended."""
        self._stop_event.set()
        with self._cond:
            self._cond.notify_all()
        if self.is_alive() and self is not threading.current_thread():
            self.join(timeout)
        return not self.is_alive()

    @property
    def stop_requested(self):
        return self._stop_event.is_set()


class StopWaiting(Exception):
    """:meth:`LoaderThread.reserve` stopped waiting because a stop was asked."""
