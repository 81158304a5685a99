"""tensorpack's distributed DataFlow: run a DataFlow in one process (or machine) and send its
datapoints over a ZMQ socket to the training. Needs pyzmq.

A sender's :func:`send_dataflow_zmq` pushes datapoints; :class:`RemoteDataZMQ` pulls them and is a
DataFlow of its own (endless). By default the receiver binds and senders connect, so several
senders may feed one training. Addresses are ZMQ endpoints: ``tcp://host:port``,
``ipc:///path/to/socket``.

Datapoints travel in tfloop's data format unless ``format`` says otherwise: a receiver decodes
data only, so a process that reaches the socket can send wrong datapoints but never run code in
the training (see docs/security.md). ``format='pickle'`` is tensorpack's default and sends any
Python object, with that risk.

A receiver takes frames (the parts of a message: a datapoint's header and each of its arrays or
buffers) of at most ``max_frame_bytes`` (:data:`DEFAULT_MAX_FRAME_BYTES`, 256 MiB): ZMQ reads a
frame's size before the frame and closes the connection of a sender whose frame is larger,
without allocating it, so that one message cannot take the training's memory. ZMQ does not say
why it closed a connection, so the receiver logs a warning naming the limit whenever a sender's
connection closes; :func:`send_dataflow_zmq` refuses such a datapoint itself, with an error.
"""
import collections
import time

import tqdm

from tfloop.dataflow import _wire
from tfloop.dataflow._workers import check_hwm, import_zmq
from tfloop.dataflow.base import DataFlow, DataFlowReentrantGuard
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int

__all__ = ["RemoteDataZMQ", "send_dataflow_zmq"]

POLL_MS = 500
DEFAULT_MAX_FRAME_BYTES = 256 * 2 ** 20
# How often, at most, a receiver repeats its warning about closed connections.
CLOSED_NOTE_SECONDS = 60.0


PullSocket = collections.namedtuple("PullSocket", ["socket", "closed_connections"])
PullSocket.__doc__ = """A receiver's PULL socket and the monitor socket that reports each of its
connections that closes (ZMQ's ``EVENT_DISCONNECTED``)."""


def open_pull_socket(context, address, hwm, bind, owner, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
    """A :class:`PullSocket`: a PULL socket with high-water mark ``hwm`` that refuses frames over
    ``max_frame_bytes`` (ZMQ's ``MAXMSGSIZE``), monitored from before it binds to (or connects
    to) ``address``, so that no closed connection goes unseen."""
    zmq = import_zmq(owner)
    socket = context.socket(zmq.PULL)
    socket.set_hwm(hwm)
    socket.setsockopt(zmq.MAXMSGSIZE, max_frame_bytes)
    monitor = socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
    _bind_or_connect(socket, address, bind, owner)
    return PullSocket(socket, monitor)


def _frame_limit_hint(max_frame_bytes):
    return (f"to take larger frames, raise max_frame_bytes (now {max_frame_bytes}) on both ends: "
            f"RemoteDataZMQ(..., max_frame_bytes=<bytes>) or ZMQInput(..., "
            f"max_frame_bytes=<bytes>), and send_dataflow_zmq(..., max_frame_bytes=<bytes>)")


class _ClosedConnections:
    """The warning a receiver logs when a sender's connection closes (throttled): ZMQ closes the
    connection of a sender whose frame is over the limit and gives no reason."""

    def __init__(self, owner, max_frame_bytes):
        self.owner, self.max_frame_bytes = owner, max_frame_bytes
        self._last_note = None
        self._unnoted = 0

    def closed(self, endpoint):
        self._unnoted += 1
        now = time.monotonic()
        if self._last_note is not None and now - self._last_note < CLOSED_NOTE_SECONDS:
            return
        count = "" if self._unnoted == 1 else f" ({self._unnoted} connections since the last note)"
        logger.warning(
            f"{self.owner}: a sender's connection to {endpoint} closed{count}. If the sender was "
            f"still sending, it sent a frame (an array or buffer of a datapoint) of more than "
            f"{self.max_frame_bytes} bytes, which {self.owner} refuses unread: that datapoint is "
            f"lost; {_frame_limit_hint(self.max_frame_bytes)}.")
        self._last_note, self._unnoted = now, 0


def _bind_or_connect(socket, address, bind, owner):
    zmq = import_zmq(owner)
    try:
        (socket.bind if bind else socket.connect)(address)
    except zmq.ZMQError as e:
        raise ValueError(f"{owner} cannot {'bind to' if bind else 'connect to'} {address!r}: {e}. "
                         f"An address looks like 'tcp://127.0.0.1:5555' or "
                         f"'ipc:///path/to/socket'.") from None


def receive(pull_sockets, format=None, should_stop=None, owner="RemoteDataZMQ",
            max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
    """Yield ``(index of the socket, datapoint)`` as they arrive on ``pull_sockets``
    (:class:`PullSocket`), decoded from ``format`` (None: tfloop's data formats;
    ``"pickle"``). With ``should_stop``, return once it is true (checked every POLL_MS while no
    message arrives). A sender's connection that closes is noted with a warning naming the frame
    limit (``owner``, ``max_frame_bytes``: the receiver and its limit, for that warning)."""
    zmq = import_zmq(owner)
    from zmq.utils.monitor import recv_monitor_message
    poller = zmq.Poller()
    for pull in pull_sockets:
        poller.register(pull.socket, zmq.POLLIN)
        poller.register(pull.closed_connections, zmq.POLLIN)
    closed = _ClosedConnections(owner, max_frame_bytes)
    timeout = POLL_MS if should_stop is not None else None
    while True:
        ready = dict(poller.poll(timeout))
        if not ready and should_stop is not None and should_stop():
            return
        for pull in pull_sockets:
            if pull.closed_connections in ready:
                event = recv_monitor_message(pull.closed_connections)
                closed.closed(event["endpoint"].decode(errors="replace"))
        for index, pull in enumerate(pull_sockets):
            if pull.socket in ready:
                yield index, _wire.decode(pull.socket.recv_multipart(copy=False), format)


def send_dataflow_zmq(df, addr, hwm=50, format=None, bind=False, *,
                      max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
    """Run ``df`` and send each datapoint to the ZMQ endpoint ``addr`` with a PUSH socket, again
    and again: this function never returns.

    Args:
        df (DataFlow): the data; reset here and iterated forever.
        addr (str): a ZMQ endpoint, e.g. ``"tcp://trainer-host:5555"``.
        hwm (int): ZMQ high-water mark: datapoints queued before sending blocks (0: no limit).
        format (str): None (tfloop's data format, read by :class:`RemoteDataZMQ` and
            :class:`~tfloop.input.ZMQInput`: lists, tuples, dicts, numpy arrays, bytes, str,
            numbers); ``'zmq_ops'`` (or ``'zmq_op'``): a list of arrays in the layout of
            tensorpack's zmq_ops library, read by ``ZMQInput``; or ``'pickle'``: any Python
            object, which the receiver unpickles (tensorpack's default; see docs/security.md).
        bind (bool): bind to ``addr`` instead of connecting (then the receiver connects).
        max_frame_bytes (int): the largest frame (an array or buffer of a datapoint) sent; a
            datapoint with a larger one is an error here, since the receiver (with the same
            limit by default) would drop it unread.

    Example:
        In the process that makes the data (the call never returns)::

            send_dataflow_zmq(MyDataFlow(), "tcp://trainer-host:5555")

        and in the training, ``RemoteDataZMQ("tcp://0.0.0.0:5555")`` on trainer-host.
    """
    zmq = import_zmq("send_dataflow_zmq")
    _wire.check_format(format, "send_dataflow_zmq")
    hwm = check_hwm(hwm, "send_dataflow_zmq: hwm")
    max_frame_bytes = check_positive_int(max_frame_bytes, "send_dataflow_zmq: max_frame_bytes")
    context = zmq.Context()
    socket = context.socket(zmq.PUSH)
    socket.set_hwm(hwm)
    try:
        _bind_or_connect(socket, addr, bind, "send_dataflow_zmq")
        df.reset_state()
        logger.info(f"send_dataflow_zmq: sending datapoints to {addr} "
                    f"({'tfloop data' if format is None else format} format).")
        _send_forever(df, socket, format, max_frame_bytes)
    finally:
        socket.close(linger=0)
        context.destroy(linger=0)


def _check_frames(frames, max_frame_bytes, index):
    largest = max(memoryview(frame).nbytes for frame in frames)
    if largest > max_frame_bytes:
        raise ValueError(f"send_dataflow_zmq: datapoint {index} of this pass has a frame of "
                         f"{largest} bytes, more than max_frame_bytes={max_frame_bytes}: the "
                         f"receiver would close the connection and drop it unread. Send smaller "
                         f"arrays, or {_frame_limit_hint(max_frame_bytes)}.")


def _send_forever(df, socket, format, max_frame_bytes):
    latencies = collections.deque(maxlen=200)
    try:
        total = len(df)
    except (NotImplementedError, TypeError):
        total = None
    while True:
        with tqdm.tqdm(total=total, leave=True, smoothing=0.8, dynamic_ncols=True) as bar:
            for index, dp in enumerate(df):
                frames = _wire.encode(dp, format)
                _check_frames(frames, max_frame_bytes, index)
                start = time.perf_counter()
                socket.send_multipart(frames)
                latencies.append(time.perf_counter() - start)
                bar.update(1)
                if bar.n % latencies.maxlen == 0:
                    mean = sum(latencies) / len(latencies)
                    bar.set_postfix({"AvgSendLat": f"{mean:.3f}"})


class RemoteDataZMQ(DataFlow):
    """The datapoints that :func:`send_dataflow_zmq` sends, pulled from one or two ZMQ endpoints:
    an endless DataFlow (no ``len``).

    It binds ``addr1`` (and ``addr2``) by default, so any process that reaches the address can
    send datapoints: bind to an ``ipc://`` path in a directory only you can enter, or to an
    interface of a trusted network (docs/security.md). In the default format it decodes data
    only; ``format='pickle'`` unpickles what arrives, which runs the sender's code.

    Attributes:
        cnt1, cnt2 (int): datapoints received from ``addr1`` and ``addr2``.

    Example:
        >>> from tfloop.dataflow import BatchData
        >>> df = RemoteDataZMQ("ipc:///home/me/run/pipe")  # the senders connect here
        >>> df = BatchData(df, 32)  # binds when iterated
    """

    def __init__(self, addr1, addr2=None, hwm=50, bind=True, *, format=None,
                 max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        """
        Args:
            addr1 (str): the ZMQ endpoint to bind (or connect to).
            addr2 (str): a second endpoint, e.g. to receive on both ``ipc://`` and ``tcp://``.
            hwm (int): ZMQ high-water mark: datapoints queued per endpoint (0: no limit).
            bind (bool): bind to the endpoints (the senders connect) or connect to them.
            format (str): None to decode tfloop's data formats (what ``send_dataflow_zmq``
                sends with ``format=None`` or ``'zmq_ops'``), or ``'pickle'`` to unpickle what
                tensorpack's sender sends by default: only from trusted processes.
            max_frame_bytes (int): the largest frame (an array or buffer of a datapoint) taken;
                a sender of a larger one has its connection closed by ZMQ before the frame is
                read, and a warning names the limit. Raise it for larger arrays (the socket then
                holds up to ``hwm`` messages of such frames per sender).
        """
        if not isinstance(addr1, str) or not addr1:
            raise ValueError(f"RemoteDataZMQ needs addr1, a ZMQ endpoint such as "
                             f"'tcp://0.0.0.0:5555', got {addr1!r}.")
        if format not in (None, "pickle"):
            raise ValueError(f"RemoteDataZMQ: format must be None (tfloop's data formats) or "
                             f"'pickle', got {format!r}.")
        self._addresses = [addr1] if addr2 is None else [addr1, addr2]
        self._hwm = check_hwm(hwm, "RemoteDataZMQ: hwm")
        self._max_frame_bytes = check_positive_int(max_frame_bytes,
                                                   "RemoteDataZMQ: max_frame_bytes")
        self._bind = bool(bind)
        self._format = format
        self._guard = DataFlowReentrantGuard()
        self.cnt1 = self.cnt2 = 0

    def reset_state(self):
        self.cnt1 = self.cnt2 = 0

    def __iter__(self):
        zmq = import_zmq("RemoteDataZMQ")
        with self._guard:
            context = zmq.Context()
            try:
                pulls = [open_pull_socket(context, address, self._hwm, self._bind,
                                          "RemoteDataZMQ", self._max_frame_bytes)
                         for address in self._addresses]
                for index, dp in receive(pulls, self._format, owner="RemoteDataZMQ",
                                         max_frame_bytes=self._max_frame_bytes):
                    yield dp
                    if index == 0:
                        self.cnt1 += 1
                    else:
                        self.cnt2 += 1
            finally:
                context.destroy(linger=0)
