"""An eager pipeline over in-memory arrays is made again stage by stage in tfloop's graph, its
arrays fed, never serialized: the same dataset ops, elements and order as the eager dataset; the
files written do not grow with the data; resume is step-exact. Other pipelines are serialized as
before and train the same."""
import glob
import os
import re

import numpy as np
import pytest
from resume_support import train_resumable
from support import LinearModel, make_regression_data
from tensorflow.core.framework import dataset_metadata_pb2

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.input.fed_arrays import ArrayFeeds
from tfloop.utils import logger

FROM = 100      # arrays of 100 bytes and more are fed in these tests (X: 288 bytes)
X, Y = make_regression_data(24)
SCALE = tf.constant(np.linspace(0.5, 2.0, 3 * 40, dtype=np.float32).reshape(40, 3))  # 480 bytes
SHIFT = tf.constant(0.25)


def _slices():
    return tf.data.Dataset.from_tensor_slices((X, Y))


def _options():
    options = tf.data.Options()
    options.deterministic = True
    options.experimental_optimization.map_parallelization = False
    return options


PIPELINES = {
    "batch": lambda: _slices().batch(5),
    "parallel batch, remainder dropped": lambda: _slices().batch(
        5, drop_remainder=True, num_parallel_calls=2, deterministic=True),
    "shuffle, a new order each pass": lambda: _slices().shuffle(24, seed=3).batch(6),
    "shuffle, one order": lambda: _slices().shuffle(
        10, seed=3, reshuffle_each_iteration=False).batch(6),
    "map capturing tensors": lambda: _slices().map(
        lambda a, b: (a * SCALE[7] + SHIFT, b)).batch(6),
    "parallel map, filter": lambda: _slices().map(
        lambda a, b: (a - 1, b * 2), num_parallel_calls=2, deterministic=True).filter(
        lambda a, b: b > 0).batch(4),
    "zip, range, concatenate": lambda: tf.data.Dataset.zip((_slices(), tf.data.Dataset.range(
        100))).map(lambda pair, i: (pair[0] + tf.cast(i, tf.float32), pair[1])).concatenate(
        _slices().take(5)).batch(7),
    "cache in memory": lambda: _slices().shuffle(24, seed=5).cache().batch(6),
    "take, skip, shard, repeat, prefetch": lambda: _slices().skip(2).take(20).shard(
        2, 1).repeat(2).batch(4).prefetch(tf.data.AUTOTUNE),
    "from_tensors": lambda: tf.data.Dataset.from_tensors((X, Y)).repeat(2),
    "dicts, options": lambda: tf.data.Dataset.from_tensor_slices(
        {"x": X, "y": Y, "id": np.arange(24)}).shuffle(24, seed=1).batch(8).prefetch(
        2).with_options(_options()),
}


@pytest.fixture
def serialized(monkeypatch):
    """The eager datasets whose definition TensorFlow serialized (``DatasetToGraphV2`` run
    eagerly; tfloop's graph runs it too, to check that a pipeline can be saved)."""
    found = []
    original = tf.raw_ops.DatasetToGraphV2

    def spy(**kwargs):
        if tf.executing_eagerly():
            found.append(kwargs["input_dataset"])
        return original(**kwargs)

    monkeypatch.setattr(tf.raw_ops, "DatasetToGraphV2", spy)
    return found


def _eager_elements(dataset, passes):
    return [element for _ in range(passes) for element in dataset.as_numpy_iterator()]


def _rebuilt_elements(dataset, count, feeds):
    """The first ``count`` elements of ``dataset``, repeated, made again in a graph of its own."""
    with tf.Graph().as_default():
        rebuilt = tfloop.as_graph_dataset(dataset, feeds=feeds)
        iterator = tfv1.data.make_initializable_iterator(rebuilt.repeat())
        element = iterator.get_next()
        with tfv1.Session() as sess:
            sess.run(iterator.initializer, feed_dict=feeds.feed_dict)
            return [sess.run(element) for _ in range(count)]


def _assert_same_elements(got, expected):
    assert len(got) == len(expected)
    for got_element, expected_element in zip(got, expected):
        tf.nest.assert_same_structure(got_element, expected_element)
        for a, b in zip(tf.nest.flatten(got_element), tf.nest.flatten(expected_element)):
            np.testing.assert_array_equal(a, b)


def _fed(feeds):
    return [array.tobytes() for array in feeds.feed_dict.values()]


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_the_elements_and_their_order_are_the_eager_datasets(name, serialized):
    expected = _eager_elements(PIPELINES[name](), passes=3)
    serialized.clear()
    feeds = ArrayFeeds(FROM)
    got = _rebuilt_elements(PIPELINES[name](), len(expected), feeds)
    _assert_same_elements(got, expected)
    assert serialized == []
    assert X.tobytes() in _fed(feeds)


def _without_given_name(node):
    """The node's attributes, the name that TensorFlow numbers each dataset it makes
    ("BatchDatasetV2:140") left out of its metadata."""
    attributes = {key: value.SerializeToString(deterministic=True)
                  for key, value in node.attr.items()}
    if "metadata" in attributes:
        metadata = dataset_metadata_pb2.Metadata.FromString(node.attr["metadata"].s)
        if re.fullmatch(node.op.encode() + rb":\d+", metadata.name):
            metadata.ClearField("name")
        attributes["metadata"] = metadata.SerializeToString(deterministic=True)
    return sorted(attributes.items())


def _function_definition(function):
    """A function's definition, its constants written one way (a scalar 0 has two)."""
    function = type(function).FromString(function.SerializeToString())
    for node in function.node_def:
        if node.op == "Const":
            value = tf.make_ndarray(node.attr["value"].tensor)
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
    return function.SerializeToString(deterministic=True)


def _canonical(serialized):
    """A serialized pipeline without its node names and resource handles: each stage as (op,
    attributes, inputs), from the last one; and its functions."""
    graph_def = tfv1.GraphDef.FromString(serialized)
    nodes = {node.name: node for node in graph_def.node}

    def stage(name):
        node = nodes[name.split(":")[0]]
        if node.op == "Const" and node.attr["dtype"].type == tf.resource.as_datatype_enum:
            return ("resource",)
        return node.op, _without_given_name(node), [stage(given) for given in node.input]

    last, = (node.input[0] for node in graph_def.node if node.op == "_Retval")
    return stage(last), sorted(_function_definition(f) for f in graph_def.library.function)


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_the_dataset_ops_made_again_are_the_eager_ones_argument_for_argument(name):
    eager = PIPELINES[name]()
    expected = tf.raw_ops.DatasetToGraphV2(input_dataset=tf.data.experimental.to_variant(eager),
                                           external_state_policy=1).numpy()
    feeds = ArrayFeeds(FROM)
    with tf.Graph().as_default():
        rebuilt = tfloop.as_graph_dataset(eager, feeds=feeds)
        serialize = tf.raw_ops.DatasetToGraphV2(
            input_dataset=tf.data.experimental.to_variant(rebuilt), external_state_policy=1)
        with tfv1.Session() as sess:
            got = sess.run(serialize, feed_dict=feeds.feed_dict)
    assert feeds
    assert _canonical(got) == _canonical(expected)


def _bytes_under(directory):
    return sum(os.path.getsize(path) for path in glob.glob(os.path.join(directory, "*"))
               if os.path.isfile(path))


class _Inputs(tfloop.Callback):
    """The ``x`` of every step."""

    def __init__(self):
        self.xs = []

    def _setup_graph(self):
        self.x, = self.get_tensors_maybe_in_tower(["x"])

    def _before_run(self, ctx):
        return [self.x]

    def _after_run(self, ctx, values):
        self.xs.append(values.results[0])


def _train_readme_form(logdir, x, y):
    """The README's form: an eager dataset, given as is, default feeding; a checkpoint and the
    events file (with the graph) written."""
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=2).batch(32)
    inputs = _Inputs()
    logger.set_logger_dir(logdir, action="keep")
    try:
        tfloop.launch_train_with_config(tfloop.TrainConfig(
            model=LinearModel(), data=ds, callbacks=[tfloop.ModelSaver(), inputs],
            monitors=[tfloop.TFEventWriter()], extra_callbacks=[], steps_per_epoch=4,
            max_epoch=1), tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    expected = [batch[0] for batch in ds.take(4).as_numpy_iterator()]
    np.testing.assert_array_equal(np.stack(inputs.xs), np.stack(expected))


def test_the_readme_form_writes_the_same_bytes_at_any_size(tmp_path, serialized):
    small, large = make_regression_data(6000), make_regression_data(60000)   # 72 KB, 720 KB
    _train_readme_form(str(tmp_path / "small"), *small)
    _train_readme_form(str(tmp_path / "large"), *large)
    assert serialized == []
    written = _bytes_under(str(tmp_path / "small"))
    assert written < large[0].nbytes / 10
    assert _bytes_under(str(tmp_path / "large")) == pytest.approx(written, rel=0.01)


def _resumable(cache):
    x, y = make_regression_data(12)
    scale = tf.constant(np.arange(1, 4, dtype=np.float32))
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * scale, b))
    if cache is not None:
        ds = ds.cache(cache)
    return ds.shuffle(12, seed=7).batch(4)


@pytest.mark.slow
@pytest.mark.parametrize("cache", ["none", "in memory", "to a file"])
def test_a_run_stopped_mid_epoch_resumes_step_exactly(tmp_path, serialized, cache):
    def source(name):
        filename = {"none": None, "in memory": "", "to a file": str(tmp_path / name)}[cache]
        return tfloop.DatasetInput(_resumable(filename), feed_arrays_from=FROM)

    _, reference = train_resumable(str(tmp_path / "reference"), source("reference.cache"))
    logdir = str(tmp_path / "log")
    first_source = source("run.cache")
    _, first = train_resumable(logdir, first_source, stop_at=4)
    _, second = train_resumable(logdir, source("run.cache"))
    assert sorted(second) == list(range(5, 10))
    assert {**first, **second} == reference
    assert serialized == [] and first_source.feeds
    if cache == "to a file":
        assert glob.glob(str(tmp_path / "run.cache*.index"))


def _padded_batches():
    x, y = make_regression_data(12)
    return tf.data.Dataset.from_tensor_slices((x, y)).padded_batch(4)


def _another_tensorflows_batches():
    x, y = make_regression_data(12)
    batched = tf.data.Dataset.from_tensor_slices((x, y)).batch(4)
    del batched._batch_size         # as if TensorFlow had renamed it
    return batched


@pytest.mark.parametrize("make", [_padded_batches, _another_tensorflows_batches],
                         ids=["a stage tfloop does not rebuild", "another TensorFlow's stage"])
def test_a_pipeline_tfloop_cannot_rebuild_is_serialized_and_trains(serialized, make):
    source = tfloop.DatasetInput(make(), feed_arrays_from=FROM)
    inputs = _Inputs()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=LinearModel(), data=source, callbacks=[inputs], extra_callbacks=[], monitors=[],
        max_epoch=2), tfloop.SimpleTrainer())
    assert len(serialized) == 1
    x, _ = make_regression_data(12)
    assert _fed(source.feeds) == [x.tobytes()]      # its large constant, fed all the same
    expected = [batch[0] for batch in _eager_elements(make(), passes=2)]
    np.testing.assert_array_equal(np.stack(inputs.xs), np.stack(expected))


def test_file_names_of_list_files_are_serialized_with_what_the_stage_does_not_keep(
        tmp_path, serialized):
    for name in "abc":
        (tmp_path / f"{name}.txt").write_text(name)
    files = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False)
    got = _rebuilt_elements(files, 3, ArrayFeeds(FROM))
    assert len(serialized) == 1
    assert got == [str(tmp_path / f"{name}.txt").encode() for name in "abc"]


def test_a_map_capturing_a_variable_is_serialized_with_the_variables_value(serialized):
    x, y = make_regression_data(12)
    factor = tf.Variable(3.0)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (a * factor, b)).batch(4)
    inputs = _Inputs()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=LinearModel(), data=ds, callbacks=[inputs], extra_callbacks=[], monitors=[],
        max_epoch=1), tfloop.SimpleTrainer())
    assert len(serialized) == 1
    np.testing.assert_allclose(np.concatenate(inputs.xs), x * 3)
