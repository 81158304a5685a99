"""send_dataflow_zmq and RemoteDataZMQ (tensorpack's dataflow.remote): datapoints sent by another
process arrive exactly; what arrives is decoded as data, never unpickled unless asked."""
import itertools
import os
import pickle

import numpy as np
import pytest
from remote_support import running_senders

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
