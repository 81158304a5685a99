"""ZMQInput: tensorpack's input source that receives each step's tensors from a ZMQ endpoint.

tensorpack read the socket inside the graph with the custom ops of its zmq_ops library, which
do not build for today's TensorFlow. Here a Python thread receives the datapoints and feeds them
to the graph the way :class:`~tfloop.input.QueueInput` does (a TensorFlow queue the step
dequeues from); the messages are those of ``send_dataflow_zmq(format='zmq_ops')``, tensorpack's
zmq_ops layout, or tfloop's own data format (``format=None``).
"""
from tfloop.compat import tf
from tfloop.dataflow._workers import check_hwm, import_zmq
from tfloop.dataflow.remote import DEFAULT_MAX_FRAME_BYTES, open_pull_socket, receive
from tfloop.input.loader import StopWaiting, datapoint_components
from tfloop.input.queue import QueueInput, _QueueFeeder
from tfloop.utils.checks import check_positive_int

__all__ = ["ZMQInput"]


class _StreamFeeder(_QueueFeeder):
    """A stream has no position to resume from: a resumed run takes what arrives."""

    def _state_dict(self):
        return None

    def _load_state_dict(self, state):
        pass


class _Received:
    """The loader thread's data: the datapoints arriving on the endpoint, until the thread is
    asked to stop."""

    def __init__(self, end_point, hwm, bind, should_stop, max_frame_bytes):
        self.end_point, self.hwm, self.bind = end_point, hwm, bind
        self.max_frame_bytes = max_frame_bytes
        self._should_stop = should_stop

    def stream(self, should_stop):
        context = import_zmq("ZMQInput").Context()
        try:
            pull = open_pull_socket(context, self.end_point, self.hwm, self.bind, "ZMQInput",
                                    self.max_frame_bytes)
            for _, dp in receive([pull], should_stop=should_stop, owner="ZMQInput",
                                 max_frame_bytes=self.max_frame_bytes):
                yield dp
        finally:
            context.destroy(linger=0)

    def __iter__(self):
        yield from self.stream(self._should_stop)
        raise StopWaiting()


class ZMQInput(QueueInput):
    """Train on datapoints that other processes send to a ZMQ endpoint with
    :func:`~tfloop.dataflow.send_dataflow_zmq` (``format='zmq_ops'``, as in tensorpack, or the
    default format).

    tensorpack received them in the graph with the TensorFlow ops of its zmq_ops library, which
    today's TensorFlow cannot load; here a Python thread receives them and feeds a TensorFlow
    queue that each step dequeues from, as :class:`QueueInput` does (its errors, statistics and
    shutdown included). The stream is endless and has no length: give ``steps_per_epoch``. A
    resumed run takes what arrives (a stream has no position).

    Each datapoint is checked against ``inputs()``. The endpoint is a network listener when it
    binds: any process that reaches it can send datapoints (decoded as data, never unpickled).
    Bind to an ``ipc://`` path in a directory only you can enter, or to an interface of a
    trusted network (docs/security.md).

    Args:
        end_point (str): the ZMQ endpoint, e.g. ``"tcp://0.0.0.0:5555"`` or
            ``"ipc:///home/me/run/pipe"``.
        hwm (int): ZMQ high-water mark: datapoints queued in the socket (0: no limit).
        bind (bool): bind to ``end_point`` (the senders connect) or connect to it.
        max_frame_bytes (int): the largest frame (an array or buffer of a datapoint) taken,
            256 MiB by default; ZMQ closes the connection of a sender of a larger one before
            reading it, and a warning names the limit. Raise it for larger arrays (the socket
            then holds up to ``hwm`` messages of such frames per sender).

    Example:
        >>> # elsewhere: send_dataflow_zmq(df, "tcp://trainer:5555", format="zmq_ops")
        >>> TrainConfig(model=MyModel(), data=ZMQInput("tcp://0.0.0.0:5555", 50),
        ...             steps_per_epoch=1000)
    """

    name = "ZMQInput"
    has_passes = False

    def __init__(self, end_point, hwm, bind=True, *, max_frame_bytes=DEFAULT_MAX_FRAME_BYTES):
        if not isinstance(end_point, str) or not end_point:
            raise ValueError(f"ZMQInput needs end_point, a ZMQ endpoint such as "
                             f"'tcp://0.0.0.0:5555', got {end_point!r}.")
        hwm = check_hwm(hwm, "ZMQInput: hwm")
        max_frame_bytes = check_positive_int(max_frame_bytes, "ZMQInput: max_frame_bytes")
        super().__init__(_Received(end_point, hwm, bool(bind), self._loader_stopping,
                                   max_frame_bytes))
        self._feeder = _StreamFeeder(self)

    def _loader_stopping(self):
        thread = self._feeder._thread
        return thread is None or thread.stop_requested

    def to_dataset(self, input_signature):
        """A ``tf.data.Dataset`` of the datapoints that arrive, checked against
        ``input_signature`` (a list of ``tf.TensorSpec``); it receives on a socket of its own
        while it is iterated.

        Example:
            >>> ds = ZMQInput("ipc:///tmp/me/pipe", 50).to_dataset(model.get_input_signature())
        """
        specs = list(input_signature)
        received = self.data

        def generate():
            for index, dp in enumerate(received.stream(None)):
                yield tuple(datapoint_components(dp, specs, f"ZMQInput datapoint {index}"))
        return tf.data.Dataset.from_generator(
            generate, output_signature=tuple(tf.TensorSpec(s.shape, s.dtype) for s in specs))

    def __str__(self):
        return f"ZMQInput({self.data.end_point})"
