"""DatasetInput's position: saved as bytes by state_dict, restored by load_state_dict."""
import pytest

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.input.base import UnsavedPosition


def _setup(make_dataset):
    graph = tf.Graph()
    with graph.as_default():
        source = tfloop.DatasetInput(make_dataset)
        source.setup([tf.TensorSpec([], tf.int64, "x")])
        (x,) = source.get_input_tensors()
        note = source.setup_state()
    return graph, source, x, note


def test_a_dataset_position_goes_from_one_session_to_another():
    graph, source, x, note = _setup(lambda: tf.data.Dataset.range(10))
    assert note is None
    with tfv1.Session(graph=graph) as sess:
        source.start(sess)
        assert [int(sess.run(x)) for _ in range(3)] == [0, 1, 2]
        blob = source.state_dict(sess)
    assert isinstance(blob, bytes)
    with tfv1.Session(graph=graph) as sess:
        source.load_state_dict(sess, blob)
        source.start(sess)                         # a restored iterator is not initialized again
        assert [int(sess.run(x)) for _ in range(2)] == [3, 4]


def test_a_pipeline_with_a_stateful_op_says_why_it_cannot_be_saved():
    graph, source, _, note = _setup(
        lambda: tf.data.Dataset.range(4).map(lambda v: v + tf.cast(
            tf.random.uniform([], 0, 2, tf.int32), tf.int64)))
    assert note.inexact and note.reason.startswith("the input pipeline cannot be saved (")
    with tfv1.Session(graph=graph) as sess:
        assert source.state_dict(sess) is None


def test_a_source_without_a_position_says_so():
    source = tfloop.DummyConstantInput([[2, 3]])
    assert source.setup_state() == UnsavedPosition(f"the input {source} has no saveable position")
    with pytest.raises(ValueError, match="has no position to restore"):
        source.load_state_dict(None, b"")
