"""A plain pipeline over large fed arrays skips tf.data's static rewrite (which would copy the
arrays at every initialization), gets the prefetch the rewrite would add, and trains and resumes
exactly as before; any other pipeline is left to tf.data."""
import glob

import pytest
from resume_support import STEPS_PER_EPOCH, make_dataset, train_resumable
from support import make_regression_data
from tensorflow.core.framework import dataset_options_pb2

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.input import static_rewrite

X, Y = make_regression_data(12)


@pytest.fixture
def small_threshold(monkeypatch):
    """The rewrite is skipped from 100 fed bytes (make_dataset feeds 192)."""
    monkeypatch.setattr(static_rewrite, "SKIP_FROM_BYTES", 100)


def _pipeline_ops(source):
    """The dataset ops that feed the source's iterator, last stage first."""
    found, pending = [], [source.iterator.initializer.inputs[0].op]
    while pending:
        op = pending.pop()
        found.append(op)
        pending.extend(t.op for t in op.inputs if t.dtype == tf.variant)
    return found


def _rewrite_off(source):
    for op in _pipeline_ops(source):
        if op.type == "OptionsDataset":
            options = dataset_options_pb2.Options.FromString(op.get_attr("serialized_options"))
            if options.optimization_options.HasField("apply_default_optimizations"):
                return not options.optimization_options.apply_default_optimizations
    return False


def _set_up(data, feed_arrays_from=100):
    source = tfloop.DatasetInput(data, feed_arrays_from=feed_arrays_from)
    with tf.Graph().as_default():
        source.setup([tf.TensorSpec([None, 3], tf.float32, "x"),
                      tf.TensorSpec([None], tf.float32, "y")])
    return source


@pytest.mark.parametrize("built", ["in a function", "eagerly"])
def test_a_plain_pipeline_over_large_fed_arrays_skips_the_rewrite_and_gets_its_prefetch(
        small_threshold, built):
    source = _set_up(make_dataset if built == "in a function" else make_dataset())
    assert _rewrite_off(source)
    types = [op.type for op in _pipeline_ops(source)]
    # Last stage first: the options, the prefetch the rewrite would add, the repeat of a finite
    # dataset, then the user's pipeline.
    assert types[:3] == ["OptionsDataset", "PrefetchDataset", "RepeatDataset"]
    assert types[3] == "BatchDatasetV2" and types[4].startswith("ShuffleDataset")


@pytest.mark.slow
@pytest.mark.parametrize("where", ["in memory", "to a file"])
def test_a_cached_pipeline_built_in_the_graph_skips_the_rewrite_and_trains_as_with_it(
        small_threshold, tmp_path, where):
    def source(name, feed_arrays_from=100):
        filename = "" if where == "in memory" else str(tmp_path / name)

        def cached():   # the cache op of a graph: CacheDataset (eagerly: CacheDatasetV2)
            return tf.data.Dataset.from_tensor_slices((X, Y)).cache(filename).shuffle(
                12, seed=7).batch(4)
        return tfloop.DatasetInput(cached, feed_arrays_from=feed_arrays_from)

    # The arrays in the graph: nothing fed, the rewrite on.
    _, reference = train_resumable(str(tmp_path / "reference"), source("reference.cache", None))
    skipped = source("skipped.cache")
    _, got = train_resumable(str(tmp_path / "log"), skipped)
    assert "CacheDataset" in [op.type for op in _pipeline_ops(skipped)]
    assert _rewrite_off(skipped)
    assert got == reference
    assert bool(glob.glob(str(tmp_path / "skipped.cache*.index"))) == (where == "to a file")


def _mapped():
    return tf.data.Dataset.from_tensor_slices((X, Y)).map(lambda x, y: (2 * x, y)).batch(4)


def _shuffle_then_repeat():
    return tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(12, seed=1).repeat().batch(4)


def _own_options():
    options = tf.data.Options()
    options.experimental_optimization.parallel_batch = False
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(4).with_options(options)


@pytest.mark.parametrize("make", [_mapped, _shuffle_then_repeat, _own_options],
                         ids=["a map", "shuffle before repeat", "optimization options set"])
def test_a_pipeline_the_rewrite_changes_keeps_it(small_threshold, make):
    source = _set_up(make)
    assert source.feeds and not _rewrite_off(source)


def test_small_fed_arrays_keep_the_rewrite():
    source = _set_up(make_dataset)
    assert source.feeds.nbytes() < static_rewrite.SKIP_FROM_BYTES
    assert not _rewrite_off(source)


@pytest.mark.slow
def test_without_the_rewrite_training_and_resuming_are_step_exact(small_threshold, tmp_path):
    def source(feed_arrays_from=100):
        return tfloop.DatasetInput(make_dataset, feed_arrays_from=feed_arrays_from)

    # The arrays in the graph: nothing fed, the rewrite on.
    _, reference = train_resumable(str(tmp_path / "reference"), source(None))
    logdir = str(tmp_path / "log")
    skipped = source()
    _, first = train_resumable(logdir, skipped, stop_at=4)
    assert _rewrite_off(skipped)
    _, second = train_resumable(logdir, source())
    assert sorted(second) == list(range(5, 3 * STEPS_PER_EPOCH + 1))
    assert {**first, **second} == reference


def test_the_elements_are_those_of_the_rewritten_pipeline(small_threshold):
    def elements(source):
        with tfv1.Session(graph=source.iterator.initializer.graph) as sess:
            source.initialize(sess)
            batch = source.iterator.get_next()
            return [sess.run(batch)[0].tolist() for _ in range(6)]

    graph = tf.Graph()
    with graph.as_default():
        skipped, kept = (tfloop.DatasetInput(make_dataset, feed_arrays_from=f) for f in (100, None))
        for source in (skipped, kept):
            source.setup([tf.TensorSpec([None, 3], tf.float32, "x"),
                          tf.TensorSpec([None], tf.float32, "y")])
        assert _rewrite_off(skipped) and not _rewrite_off(kept)
        assert elements(skipped) == elements(kept)
