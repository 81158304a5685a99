"""A predictor's inputs (issue 23, bugs 1 and 2): string inputs take bytes and str in any
container, numbers that do not fit the input's dtype and values of another kind are refused
with the input's name, the value and the dtype."""
import numpy as np
import pytest

from tfloop import OnlinePredictor
from tfloop.compat import tf, tfv1


@pytest.fixture
def string_predictor():
    graph = tf.Graph()
    with graph.as_default():
        text = tfv1.placeholder(tf.string, [None], name="text")
        length = tf.strings.length(text)
        with tfv1.Session(graph=graph) as sess:
            yield OnlinePredictor([text], [length], sess=sess)


@pytest.fixture
def int_predictor():
    graph = tf.Graph()
    with graph.as_default():
        label = tfv1.placeholder(tf.int32, [None], name="label")
        with tfv1.Session(graph=graph) as sess:
            yield OnlinePredictor([label], [tf.cast(label, tf.float64) * 1.0], sess=sess)


@pytest.mark.parametrize("value", [
    np.array([b"a", b"bcd"]),                # dtype S
    np.array(["a", "bcd"]),                  # dtype U
    ["a", "bcd"],                            # a list of str
    [b"a", b"bcd"],                          # a list of bytes
    np.array([b"a", "bcd"], dtype=object),   # already an object array
], ids=["S", "U", "str-list", "bytes-list", "object"])
def test_string_input_takes_bytes_and_str(string_predictor, value):
    length, = string_predictor(value)
    assert length.tolist() == [1, 3]


def test_string_input_takes_a_jpeg_as_tensorpack_export_model_feeds_it(string_predictor):
    jpeg = bytes([0xFF, 0xD8, 0x00, 0x10, 0xFF, 0xD9])
    length, = string_predictor(np.array([jpeg]))
    assert length.tolist() == [6]


@pytest.mark.parametrize("value,got", [
    (np.array([1.5, 2.0]), r"dtype float64 \(e.g. 1.5\)"),
    (np.array([1.5], dtype=object), r"1.5 \(float\)"),
    ([b"a", 3], r"3 \(int\)"),
])
def test_floats_for_a_string_input_are_refused_by_name(string_predictor, value, got):
    with pytest.raises(TypeError, match=r"input 'text:0' expects string \[None\] \(bytes or "
                                        rf"str values\), got {got}; give bytes or str"):
        string_predictor(value)


@pytest.mark.parametrize("value,bad", [
    (np.array([3, 2**31 + 5], np.int64), 2**31 + 5),
    ([-(2**31) - 1], -(2**31) - 1),
    (np.array([2**63], np.uint64), 2**63),
])
def test_an_integer_the_input_cannot_hold_is_refused(int_predictor, value, bad):
    with pytest.raises(ValueError, match=rf"input 'label:0' expects int32 \[None\], got the "
                                         rf"value {bad}, which int32 cannot hold"):
        int_predictor(value)


def test_integers_in_range_are_cast(int_predictor):
    out, = int_predictor(np.array([-(2**31), 2**31 - 1], np.int64))
    assert out.tolist() == [-(2**31), 2**31 - 1]
