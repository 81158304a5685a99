"""The arrays of a tf.data pipeline are fed when its iterator starts, not stored in the graph:
the events file and the checkpoints' meta graphs hold no copy, and training is the same."""
import collections
import glob
import json
import os
import threading

import numpy as np
import pytest
from resume_support import STEPS_PER_EPOCH, make_dataset, train_resumable
from support import LinearModel, make_regression_data

import tfloop
from tfloop.compat import tf
from tfloop.input import fed_arrays
from tfloop.input.fed_arrays import ArrayFeeds
from tfloop.utils import logger

# make_dataset's x is 12 x 3 float32 (144 bytes), fed from 100 bytes; its y (48 bytes) is not.
FROM = 100
X, Y = make_regression_data(12)


def _files_holding(logdir, data):
    return sorted(os.path.basename(path) for path in glob.glob(os.path.join(logdir, "*"))
                  if os.path.isfile(path) and data in open(path, "rb").read())


def _train_and_save(logdir, source):
    logger.set_logger_dir(logdir, action="keep")
    try:
        tfloop.launch_train_with_config(tfloop.TrainConfig(
            model=LinearModel(), data=source, callbacks=[tfloop.ModelSaver()],
            monitors=[tfloop.TFEventWriter()], extra_callbacks=[], max_epoch=1),
            tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()


@pytest.mark.parametrize("built", ["in a function", "eagerly"])
def test_the_events_file_and_the_meta_graph_hold_no_fed_array(tmp_path, built):
    data = make_dataset if built == "in a function" else make_dataset()
    fed = tfloop.DatasetInput(data, feed_arrays_from=FROM)
    _train_and_save(str(tmp_path / "fed"), fed)
    # y (48 bytes) goes with x, from the same from_tensor_slices.
    assert [a.tobytes() for a in fed.feeds.feed_dict.values()] == [X.tobytes(), Y.tobytes()]
    assert _files_holding(str(tmp_path / "fed"), X.tobytes()) == []
    # The same run with the arrays in the graph: the graph is written twice.
    stored = tfloop.DatasetInput(data if built == "in a function" else make_dataset(),
                                 feed_arrays_from=None)
    _train_and_save(str(tmp_path / "stored"), stored)
    assert not stored.feeds
    written = _files_holding(str(tmp_path / "stored"), X.tobytes())
    assert len(written) == 2 and written[0].startswith("events.out.tfevents.")
    assert written[1] == "graph-3.meta"


@pytest.mark.parametrize("built", ["in a function", "eagerly"])
def test_fed_arrays_train_exactly_as_arrays_in_the_graph(tmp_path, built):
    def run(name, feed_arrays_from):
        data = make_dataset if built == "in a function" else make_dataset()
        source = tfloop.DatasetInput(data, feed_arrays_from=feed_arrays_from)
        _, after_step = train_resumable(str(tmp_path / name), source)
        return source, after_step

    fed, fed_steps = run("fed", FROM)
    stored, stored_steps = run("stored", None)
    assert fed.feeds.nbytes() == X.nbytes + Y.nbytes
    assert not stored.feeds
    assert sorted(fed_steps) == list(range(1, 3 * STEPS_PER_EPOCH + 1))
    assert fed_steps == stored_steps


@pytest.mark.slow
@pytest.mark.parametrize("stop_at", [2, 4])
def test_a_run_on_fed_arrays_resumes_step_exactly(tmp_path, stop_at):
    def source():
        return tfloop.DatasetInput(make_dataset, feed_arrays_from=FROM)

    _, reference = train_resumable(str(tmp_path / "reference"), source())
    logdir = str(tmp_path / "log")
    _, first = train_resumable(logdir, source(), stop_at=stop_at)
    assert os.path.exists(os.path.join(logdir, f"model-{stop_at}.iterator"))
    config, second = train_resumable(logdir, source())
    assert config.resume_from == os.path.join(logdir, f"model-{stop_at}")
    assert sorted(second) == list(range(stop_at + 1, 3 * STEPS_PER_EPOCH + 1))
    assert {**first, **second} == reference


def test_inference_and_prediction_reinitialize_with_the_fed_arrays(tmp_path):
    def one_pass():
        return tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(4),
                                   repeat=False, feed_arrays_from=FROM)

    logger.set_logger_dir(str(tmp_path), action="keep")
    runner = tfloop.InferenceRunner(one_pass(), tfloop.ScalarStats("cost"))
    try:
        trainer = tfloop.SimpleTrainer()
        tfloop.launch_train_with_config(tfloop.TrainConfig(
            model=LinearModel(), data=tfloop.DatasetInput(make_dataset, feed_arrays_from=FROM),
            callbacks=[runner, tfloop.ModelSaver()], monitors=[tfloop.JSONWriter()],
            extra_callbacks=[], max_epoch=2), trainer)
    finally:
        logger.unset_logger_dir()
    assert runner._input.feeds.nbytes() == X.nbytes + Y.nbytes
    stats = json.load(open(tmp_path / "stats.json"))
    config = tfloop.PredictConfig(model=LinearModel(), output_names=["pred"],
                                  session_init=tfloop.SaverRestore(str(tmp_path / "model-6")))
    predictor = tfloop.FeedfreePredictor(config, one_pass())
    first = predictor()[0]
    weights = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=LinearModel(), input_names=["x"], output_names=["pred"],
        session_init=tfloop.SaverRestore(str(tmp_path / "model-6"))))(X[:4])[0]
    np.testing.assert_array_equal(first, weights)
    for epoch, record in enumerate(stats, start=1):
        assert record["epoch_num"] == epoch and np.isfinite(record["validation_cost"])


class _Pair(collections.namedtuple("_Pair", ["x", "y"])):
    pass


def test_only_large_numeric_arrays_of_this_thread_and_graph_become_placeholders():
    feeds = ArrayFeeds(min_bytes=FROM)
    big, small = np.zeros([40], np.float32), np.zeros([40], np.int8)
    words = np.array(["a"] * 40)
    seen = {}

    def elsewhere():
        seen["other thread"] = tf.data.Dataset.from_tensor_slices(big)

    original = tf.data.Dataset.__dict__["from_tensor_slices"]
    with tf.Graph().as_default() as graph, feeds.capture():
        dataset = tf.data.Dataset.from_tensor_slices(
            ({"a": big, "b": small}, _Pair(big, [0.0] * 40), words))
        alone = tf.data.Dataset.from_tensors((big, small))
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
        with tf.Graph().as_default():
            seen["other graph"] = tf.compat.v1.data.Dataset.from_tensors(big)
    assert tf.data.Dataset.__dict__["from_tensor_slices"] is original
    placeholders = [op for op in graph.get_operations() if op.type == "Placeholder"]
    assert len(placeholders) == 4 == len(feeds.feed_dict)
    # Sliced: every array of the call (not the list, nor the strings); whole: the large one.
    assert [(p.shape.as_list(), a.dtype) for p, a in feeds.feed_dict.items()] == [
        ([None], np.float32), ([None], np.int8), ([None], np.float32), ([40], np.float32)]
    for array in feeds.feed_dict.values():
        np.testing.assert_array_equal(array, 0)
    assert dataset.element_spec[0]["a"].shape == [] and alone.element_spec[0].shape == [40]
    assert isinstance(dataset.element_spec[1], _Pair)
    assert seen["other thread"].element_spec.shape == []     # built eagerly, as without capture
    assert "Placeholder" not in [op.type for op in
                                 seen["other graph"]._variant_tensor.graph.get_operations()]


def test_an_aligned_array_is_fed_as_is_and_another_is_copied_once_aligned():
    feeds = ArrayFeeds(min_bytes=FROM)
    buffer = np.arange(4 * 1000 + 16, dtype=np.float32)
    start = (-buffer.ctypes.data % 64) // 4
    aligned, unaligned = buffer[start:start + 1000], buffer[start + 1:start + 1001]
    with tf.Graph().as_default():
        first, second = feeds.substitute((aligned, unaligned))
    assert feeds.feed_dict[first] is aligned
    copy = feeds.feed_dict[second]
    assert copy.ctypes.data % 64 == 0 and not np.shares_memory(copy, buffer)
    np.testing.assert_array_equal(copy, unaligned)
    assert feeds.nbytes() == 8000


def test_the_aligned_copy_is_made_in_a_thread_and_shapes_are_known_before_it_ends(monkeypatch):
    release, copying = threading.Event(), []

    def held_copy(array):
        copying.append(threading.current_thread().name)
        assert release.wait(30)
        return aligned_copy(array)

    aligned_copy = fed_arrays._aligned
    monkeypatch.setattr(fed_arrays, "_aligned", held_copy)
    feeds = ArrayFeeds(min_bytes=FROM)
    buffer = np.arange(4 * 1000 + 16, dtype=np.float32)
    start = (-buffer.ctypes.data % 64) // 4 + 1
    unaligned = buffer[start:start + 1000].reshape(250, 4)
    with tf.Graph().as_default():
        placeholder, = feeds.substitute((unaligned,))
    # The graph goes on being built while the copy is held.
    stand_in = feeds.stand_ins()[placeholder]
    assert copying and copying[0].startswith("tfloop-align-arrays")
    assert stand_in.shape == (250, 4) and stand_in.dtype == np.float32
    assert stand_in.ctypes.data % 64 == 0 and not np.shares_memory(stand_in, buffer)
    assert feeds.nbytes() == 4000 and feeds
    release.set()
    copy = feeds.feed_dict[placeholder]
    np.testing.assert_array_equal(copy, unaligned)
    assert copy.ctypes.data % 64 == 0 and feeds.feed_dict[placeholder] is copy


def test_a_failed_copy_is_raised_where_the_arrays_are_fed(monkeypatch):
    def failing_copy(array):
        raise MemoryError(f"cannot allocate {array.nbytes} bytes")

    monkeypatch.setattr(fed_arrays, "_aligned", failing_copy)
    feeds = ArrayFeeds(min_bytes=FROM)
    unaligned = np.arange(1001, dtype=np.float32)[1:]
    if unaligned.ctypes.data % 64 == 0:
        unaligned = np.arange(1002, dtype=np.float32)[2:]
    with tf.Graph().as_default():
        feeds.substitute((unaligned,))
    with pytest.raises(MemoryError, match="4000 bytes"):
        assert feeds.feed_dict is None


def test_a_fed_pipeline_with_an_unseeded_random_op_says_it_cannot_be_saved():
    def make_random():
        return tf.data.Dataset.from_tensor_slices((X, Y)).map(
            lambda x, y: (x + tf.random.uniform([3]), y)).batch(4)

    graph = tf.Graph()
    with graph.as_default():
        source = tfloop.DatasetInput(make_random, feed_arrays_from=FROM)
        source.setup(LinearModel().get_input_signature())
        note = source.setup_state()
    assert source.feeds and note.inexact
    assert note.reason.startswith("the input pipeline cannot be saved (")


def test_a_bad_size_is_refused_with_its_name():
    with pytest.raises(ValueError, match=r"feed_arrays_from .* got -1: e\.g\. "):
        tfloop.DatasetInput(make_dataset, feed_arrays_from=-1)
    with pytest.raises(ValueError, match=r"feed_arrays_from .* got True: e\.g\. "):
        tfloop.DatasetInput(make_dataset, feed_arrays_from=True)
