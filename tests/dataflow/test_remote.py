"""send_dataflow_zmq and RemoteDataZMQ (tensorpack's dataflow.remote): datapoints sent by another
process arrive exactly; what arrives is decoded as data, never unpickled unless asked."""
import itertools
import os
import pickle
import threading

import numpy as np
import pytest
from remote_support import (
    announce_huge_frame,
    free_tcp_port,
    running_senders,
    virtual_memory_bytes,
)
from support import scaled_timeout

from tfloop.dataflow import DataFromList, RemoteDataZMQ, _wire, send_dataflow_zmq

zmq = pytest.importorskip("zmq")

DATAPOINTS = [
    [np.arange(6, dtype=np.float32).reshape(2, 3), np.int64(7), "text", b"\x00raw"],
    [np.array([True, False]), 1.5, 3, None],
    [{"image": np.zeros((2, 2), np.uint8), 4: (1, "a")}, np.float16(0.5), np.array("u", "U1")],
    [np.empty((0, 3), np.int32), np.complex64(1 + 2j), [[1, 2], []], True],
]


@pytest.fixture
def senders(tmp_path):
    yield from running_senders(tmp_path)


def same(a, b):
    """Equal values of the same types (numpy dtypes and shapes included)."""
    if isinstance(a, (np.ndarray, np.generic)):
        return type(a) is type(b) and a.dtype == b.dtype and np.shape(a) == np.shape(b) \
            and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def receive(df, count):
    df.reset_state()
    return list(itertools.islice(df, count))


def ipc(tmp_path, name="pipe"):
    return f"ipc://{tmp_path / name}"


@pytest.mark.slow
def test_the_datapoints_of_another_process_arrive_exactly(tmp_path, senders):
    senders.dataflow(DATAPOINTS, ipc(tmp_path))
    df = RemoteDataZMQ(ipc(tmp_path))
    got = receive(df, 2 * len(DATAPOINTS))
    assert all(map(same, got, DATAPOINTS * 2)), got
    assert df.cnt1 == 2 * len(DATAPOINTS) - 1  # counted once the next one is asked for
    got[0][0][0, 0] = 9.0  # arrays are writable, as unpickled ones are


@pytest.mark.slow
def test_two_addresses_and_a_receiver_that_connects(tmp_path, senders):
    senders.dataflow([[1]], ipc(tmp_path, "a"))
    senders.dataflow([[2]], ipc(tmp_path, "b"))
    df = RemoteDataZMQ(ipc(tmp_path, "a"), ipc(tmp_path, "b"))
    df.reset_state()
    seen = {1: 0, 2: 0}
    for dp in df:  # until both senders were heard (each connects when it is ready)
        seen[dp[0]] += 1
        if all(seen.values()):
            break
    seen[dp[0]] -= 1  # the last one is counted once the next one is asked for
    assert (df.cnt1, df.cnt2) == (seen[1], seen[2])
    senders.dataflow([[3]], ipc(tmp_path, "c"), bind=True)
    assert receive(RemoteDataZMQ(ipc(tmp_path, "c"), bind=False), 2) == [[3], [3]]


def test_zmq_ops_format_sends_lists_of_arrays_as_tensorpack_did(tmp_path, senders):
    senders.dataflow([[np.ones((2, 2), np.uint8), 3, 0.5]], ipc(tmp_path), format="zmq_ops")
    (dp,) = receive(RemoteDataZMQ(ipc(tmp_path)), 1)
    assert same(dp, [np.ones((2, 2), np.uint8), np.array(3, np.int32),
                     np.array(0.5, np.float32)])


def test_the_zmq_ops_dtype_codes_are_tensorflows():
    from tfloop.compat import tf
    for name, code in _wire._TF_ENUMS.items():
        assert tf.as_dtype(name).as_datatype_enum == code, name


@pytest.mark.slow
def test_pickle_is_only_read_when_the_receiver_asks_for_it(tmp_path, senders):
    senders.dataflow([[{1, 2}]], ipc(tmp_path, "pickled"), format="pickle")
    with pytest.raises(ValueError, match="format='pickle'"):
        receive(RemoteDataZMQ(ipc(tmp_path, "pickled")), 1)
    senders.dataflow([[{1, 2}]], ipc(tmp_path, "trusted"), format="pickle")
    assert receive(RemoteDataZMQ(ipc(tmp_path, "trusted"), format="pickle"), 1) == [[{1, 2}]]


class Exploit:
    """Makes a directory when unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.mark.parametrize("frames", [
    "pickle",
    [_wire.MAGIC + b'{"array":0,"dtype":"|O","shape":[1],"scalar":false}', b"\x00" * 8],
    [_wire.MAGIC + b'{"array":0,"dtype":"<f4","shape":[4],"scalar":false}', b"\x00" * 8],
    [_wire.MAGIC + b'{"dict":[[{"list":[]},{"value":1}]]}'],
    [b"\x01\x00\x00\x00\x63\x00\x00\x00"],
], ids=["pickle", "object_dtype", "short_buffer", "unhashable_key", "bad_zmq_ops"])
def test_a_message_that_is_not_data_is_refused_and_nothing_runs(tmp_path, senders, frames):
    marker = str(tmp_path / "unpickled")
    if frames == "pickle":
        frames = [pickle.dumps([Exploit(marker)])]
    df = RemoteDataZMQ(ipc(tmp_path))
    df.reset_state()
    itr = iter(df)
    senders.frames(ipc(tmp_path), frames)
    with pytest.raises(ValueError, match="received message"):
        next(itr)
    assert not os.path.exists(marker)


def test_what_is_not_data_is_refused_at_the_sender_naming_pickle(tmp_path):
    with pytest.raises(TypeError, match="a set cannot be sent as data.*format='pickle'"):
        send_dataflow_zmq(DataFromList([[{1}]]), ipc(tmp_path))
    with pytest.raises(TypeError, match="dtype object"):
        _wire.encode([np.array([None])])
    with pytest.raises(TypeError, match="zmq_ops.*dtype <U1"):
        _wire.encode([np.array(["a"])], "zmq_ops")


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="format must be one of"):
        send_dataflow_zmq(DataFromList([[1]]), "ipc:///tmp/x", format="json")
    with pytest.raises(ValueError, match="needs addr1"):
        RemoteDataZMQ("")
    with pytest.raises(ValueError, match="cannot bind to 'nonsense'"):
        next(iter(RemoteDataZMQ("nonsense")))


def _first_datapoint(df):
    """A thread that iterates ``df`` (binding its sockets) and keeps its first datapoint."""
    got = []

    def take():
        got.append(next(iter(df)))
    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread, got


def test_a_frame_over_the_limit_is_refused_unread_and_normal_data_still_flows(
        tmp_path, senders, log_warnings):
    port = free_tcp_port()
    address = f"tcp://127.0.0.1:{port}"
    df = RemoteDataZMQ(address)        # the default limit, 256 MiB
    df.reset_state()
    thread, got = _first_datapoint(df)
    before = virtual_memory_bytes()
    # A receiver without a limit allocates the announced 1 GiB and waits for it.
    assert announce_huge_frame(address, 2 ** 30, scaled_timeout(5))
    assert virtual_memory_bytes() - before < 2 ** 29
    senders.dataflow([[np.arange(3)]], address)
    thread.join(scaled_timeout(60))
    assert same(got, [[np.arange(3)]])
    assert any(f"a sender's connection to {address} closed" in m and
               "of more than 268435456 bytes, which RemoteDataZMQ refuses unread" in m and
               "RemoteDataZMQ(..., max_frame_bytes=<bytes>)" in m for m in log_warnings)


@pytest.mark.slow
def test_a_raised_limit_takes_what_the_default_refuses(tmp_path, senders):
    big = np.zeros(3 * 2 ** 20, np.uint8)
    senders.dataflow([[big]], ipc(tmp_path), max_frame_bytes=4 * 2 ** 20)
    df = RemoteDataZMQ(ipc(tmp_path), max_frame_bytes=4 * 2 ** 20)
    assert same(receive(df, 1), [[big]])


def test_the_sender_refuses_a_frame_over_its_limit_naming_it(tmp_path):
    with pytest.raises(ValueError, match=(
            r"^send_dataflow_zmq: datapoint 1 of this pass has a frame of 2000 bytes, more than "
            r"max_frame_bytes=1000: the receiver would close the connection and drop it unread\. "
            r"Send smaller arrays, or to take larger frames, raise max_frame_bytes \(now 1000\) on "
            r"both ends: RemoteDataZMQ\(\.\.\., max_frame_bytes=<bytes>\) or ZMQInput\(\.\.\., "
            r"max_frame_bytes=<bytes>\), and send_dataflow_zmq\(\.\.\., "
            r"max_frame_bytes=<bytes>\)\.$")):
        send_dataflow_zmq(DataFromList([[np.zeros(10, np.uint8)], [np.zeros(2000, np.uint8)]],
                                       shuffle=False), ipc(tmp_path), max_frame_bytes=1000)
    with pytest.raises(ValueError, match="max_frame_bytes must be a positive int"):
        RemoteDataZMQ(ipc(tmp_path), max_frame_bytes=0)
