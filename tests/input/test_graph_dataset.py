"""Eagerly built tf.data datasets train, validate and resume like datasets built in the graph."""
import json
import os

import numpy as np
import pytest
from distributed_support import (
    BATCH,
    MLP,
    MODEL_VARIABLES,
    STEPS,
    CaptureVariables,
    initial_values,
    make_data,
    train_script,
)
from resume_support import StopAt, make_dataset, read_stats, train
from support import LinearModel, dataset_fn, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1


class InputLog(tfloop.Callback):
    """Records the ``x`` each step trained on, its cost, and the final weights."""

    def __init__(self):
        self.xs, self.costs, self.weights = [], [], None

    def _setup_graph(self):
        self.x, self.cost, self.w = self.get_tensors_maybe_in_tower(["x", "cost", "w:0"])

    def _before_run(self, ctx):
        return [self.x, self.cost, self.w]

    def _after_run(self, ctx, values):
        x, cost, self.weights = values.results
        self.xs.append(x)
        self.costs.append(float(cost))


def eager_batches(x, y, batch_size=4):
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)


def test_eager_dataset_trains_bit_for_bit_like_the_function_form():
    x, y = make_regression_data(12)
    eager_log, fn_log = InputLog(), InputLog()
    trainer = train_linear([eager_log], data=eager_batches(x, y), max_epoch=3)
    train_linear([fn_log], data=dataset_fn(x, y, 4), max_epoch=3)
    assert isinstance(trainer.input_source, tfloop.DatasetInput)
    assert trainer.global_step == 9               # its size (3 batches) is the epoch
    assert eager_log.costs == fn_log.costs
    assert eager_log.weights.tobytes() == fn_log.weights.tobytes()
    assert np.mean(eager_log.costs[-3:]) < np.mean(eager_log.costs[:3]) / 3


def _pipelines():
    x, y = make_regression_data(12)
    base = tf.data.Dataset.from_tensor_slices((x, y))

    def generator():
        yield from zip(x, y)

    signature = (tf.TensorSpec([3], tf.float32), tf.TensorSpec([], tf.float32))
    return {
        "map": lambda: base.map(lambda a, b: (a * 2, b)).batch(4),
        "parallel map": lambda: base.map(lambda a, b: (a + 1, b),
                                         num_parallel_calls=tf.data.AUTOTUNE).batch(4),
        "shuffle": lambda: base.shuffle(12, seed=3).batch(4),
        "cache": lambda: base.cache().batch(4),
        "interleave": lambda: tf.data.Dataset.range(2).interleave(
            lambda i: base.skip(i * 6).take(6), cycle_length=2).batch(4),
        "prefetch": lambda: base.batch(4).prefetch(tf.data.AUTOTUNE),
        "py_function": lambda: base.map(lambda a, b: (
            tf.ensure_shape(tf.py_function(lambda t: t * 3, [a], tf.float32), [3]), b)).batch(4),
        "numpy_function": lambda: base.map(lambda a, b: (
            tf.ensure_shape(tf.numpy_function(lambda t: t - 1, [a], tf.float32), [3]),
            b)).batch(4),
        "from_generator": lambda: tf.data.Dataset.from_generator(
            generator, output_signature=signature).batch(4),
        "tfds-style dicts": lambda: tf.data.Dataset.from_tensor_slices(
            {"x": x, "y": y, "id": np.arange(12)}).shuffle(12, seed=1).batch(4),
    }


PIPELINES = _pipelines()


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_eager_pipeline_gives_the_same_elements_in_training(name):
    make = PIPELINES[name]
    once = make()
    expected = [b["x"] if isinstance(b, dict) else b[0]
                for _ in range(2) for b in once.as_numpy_iterator()]
    log = InputLog()
    # Repeated here, as pipelines on Python functions have no known size that tfloop could repeat.
    trainer = train_linear([log], data=make().repeat(), steps_per_epoch=3, max_epoch=2)
    assert trainer.global_step == 6
    np.testing.assert_array_equal(np.stack(log.xs), np.stack(expected))


def test_eager_dataset_with_unseeded_random_ops_trains():
    x, y = make_regression_data(12)
    noisy = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(12).map(
        lambda a, b: (a + tf.random.uniform([3], maxval=1e-3), b)).batch(4)
    log = InputLog()
    train_linear([log], data=noisy, max_epoch=2)
    assert len(log.xs) == 6
    got = np.sort(np.concatenate(log.xs[:3]), axis=0)
    np.testing.assert_allclose(got, np.sort(x, axis=0), atol=2e-3)
    assert not np.array_equal(got, np.sort(x, axis=0))


@pytest.mark.slow
def test_two_towers_on_logical_cpus_with_an_eager_dataset():
    x, y = make_data(STEPS)
    eager = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH // 2)
    capture = CaptureVariables()
    trainer = tfloop.SyncMultiGPUTrainerReplicated(2)
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=MLP(), data=eager, callbacks=[capture], steps_per_epoch=STEPS, max_epoch=1,
        session_init=tfloop.DictRestore(initial_values())), trainer)
    reference = train_script(tfloop.SimpleTrainer(), save=False).values
    assert trainer.global_step == STEPS
    for name in MODEL_VARIABLES:
        np.testing.assert_allclose(capture.values[name], reference[name], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(capture.values["tower1/" + name], capture.values[name])


def test_inference_runner_validates_on_an_eager_dataset():
    x, y = make_regression_data(12)
    xv, yv = make_regression_data(10, seed=4)
    eager_val = eager_batches(xv, yv)
    weights = []

    class Weights(tfloop.Callback):
        def _setup_graph(self):
            self.w = next(v for v in tfv1.global_variables() if v.op.name == "w")

        def _trigger(self):
            weights.append(self.trainer.sess.run(self.w))

    runner = tfloop.InferenceRunner(eager_val, [tfloop.ScalarStats("cost")])
    trainer = train_linear([runner, Weights()], data=eager_batches(x, y), max_epoch=3)
    got = [v for _, v in trainer.monitors.get_history("validation_cost")]
    expected = [np.mean(((xv @ w)[:, 0] - yv) ** 2) for w in weights]
    assert got == pytest.approx(expected, rel=1e-5)
    assert len(got) == 3 and got[-1] < got[0]


@pytest.mark.slow
def test_eager_dataset_run_resumes_at_the_exact_element(tmp_path):
    reference_log = str(tmp_path / "reference")
    _, reference, _ = train(reference_log, make_data=make_dataset())
    _, function_form, _ = train(str(tmp_path / "function"), make_data=make_dataset)
    assert reference.after_step == function_form.after_step     # the same elements, in order

    logdir = str(tmp_path / "log")
    _, first, _ = train(logdir, make_data=make_dataset(), extra=[StopAt(5)])
    with open(os.path.join(logdir, "model-5.resume.json")) as f:
        state = json.load(f)
    assert state["iterator"]["file"] == "model-5.iterator"
    config, second, _ = train(logdir, make_data=make_dataset())
    assert config.resume_from == os.path.join(logdir, "model-5")
    assert first.after_step + second.after_step == reference.after_step
    assert second.final.tobytes() == reference.final.tobytes()
    assert read_stats(logdir) == read_stats(reference_log)


def test_as_graph_dataset_rebuilds_an_eager_dataset_in_the_current_graph():
    eager = tf.data.Dataset.range(10).map(lambda i: i * i).batch(4)
    for given in (eager, lambda: eager, lambda: tf.data.Dataset.range(10).map(
            lambda i: i * i).batch(4)):
        graph = tf.Graph()
        with graph.as_default():
            dataset = tfloop.as_graph_dataset(given)
            assert dataset.element_spec == eager.element_spec
            iterator = tfv1.data.make_initializable_iterator(dataset)
            element = iterator.get_next()
            with tfv1.Session() as sess:
                sess.run(iterator.initializer)
                got = [sess.run(element).tolist() for _ in range(3)]
        assert got == [[0, 1, 4, 9], [16, 25, 36, 49], [64, 81]]


def test_a_dataset_of_another_graph_is_refused_with_the_fix():
    x, y = make_regression_data(12)
    with tf.Graph().as_default():
        other = eager_batches(x, y)
    with pytest.raises(ValueError, match=r"DatasetInput got a tf.data.Dataset built in another "
                                         r"graph than tfloop's: build it eagerly.*or pass the "
                                         r"function that builds it"):
        train_linear([], data=other)


@pytest.mark.parametrize("given, error, match", [
    (42, TypeError, ("as_graph_dataset needs a tf.data.Dataset or a function that builds one, "
                     "got 42")),
    (lambda: [1, 2], TypeError, (r"The function given to as_graph_dataset returned \[1, 2\], "
                                 r"not a tf.data.Dataset")),
])
def test_as_graph_dataset_refuses_what_is_not_a_dataset(given, error, match):
    with tf.Graph().as_default(), pytest.raises(error, match=match):
        tfloop.as_graph_dataset(given)


def test_a_dataset_tensorflow_cannot_serialize_gets_one_sentence_with_the_fix(monkeypatch):
    def too_large(**kwargs):
        raise tf.errors.InvalidArgumentError(
            None, None, "Cannot serialize protocol buffer larger than 2GB")

    monkeypatch.setattr(tf.raw_ops, "DatasetToGraphV2", too_large)
    # range is made again in the graph, unbatch is not: the pipeline is serialized.
    unknown_stage = tf.data.Dataset.range(4).batch(2).unbatch()
    with pytest.raises(ValueError, match=r"^DatasetInput cannot bring this eagerly built "
                                         r"tf.data.Dataset into tfloop's graph, because TensorFlow "
                                         r"cannot serialize it \(Cannot serialize protocol buffer "
                                         r"larger than 2GB\): pass the function that builds the "
                                         r"dataset instead, e.g. DatasetInput\(make_dataset\)\.$"):
        tfloop.DatasetInput(unknown_stage)
    tfloop.DatasetInput(tf.data.Dataset.range(4).batch(2))


@pytest.mark.slow
def test_a_python_function_pipeline_resumes_with_its_input_restarted(tmp_path, log_warnings):
    x, y = make_regression_data(12)

    def generator():
        yield from zip(x, y)

    generated = tf.data.Dataset.from_generator(generator, output_signature=(
        tf.TensorSpec([3], tf.float32), tf.TensorSpec([], tf.float32))).batch(4).repeat()
    logdir = str(tmp_path / "log")

    def run(extra):
        tfloop.logger.set_logger_dir(logdir, action="keep")
        trainer = tfloop.SimpleTrainer()
        tfloop.launch_train_with_config(tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=generated, steps_per_epoch=3, max_epoch=2,
            callbacks=[tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=2)] + extra),
            trainer)
        tfloop.logger.unset_logger_dir()
        return trainer

    run([StopAt(2)])
    with open(os.path.join(logdir, "model-2.resume.json")) as f:
        state = json.load(f)
    assert state["iterator"] is None
    assert "PyFunc is stateful" in state["input_note"]
    assert any("resuming is exact only for a stateless pipeline" in m for m in log_warnings)
    assert run([]).global_step == 6


def test_the_rebuilt_pipeline_runs_the_same_dataset_ops_as_the_function_form():
    x, y = make_regression_data(12)

    def make():
        return tf.data.Dataset.from_tensor_slices((x, y)).map(
            lambda a, b: (a * 2, b), num_parallel_calls=2).batch(4).prefetch(2)

    def dataset_ops(dataset):
        serialized = tfv1.Session().run(tf.raw_ops.DatasetToGraphV2(
            input_dataset=tf.data.experimental.to_variant(dataset)))
        return sorted(node.op for node in tfv1.GraphDef.FromString(serialized).node)

    eager = make()
    with tf.Graph().as_default():
        rebuilt, built_here = dataset_ops(tfloop.as_graph_dataset(eager)), dataset_ops(make())
    assert rebuilt == built_here
    assert {"TensorSliceDataset", "ParallelMapDatasetV2", "BatchDatasetV2",
            "PrefetchDataset"} <= set(rebuilt)


def test_a_large_serialized_eager_dataset_gets_a_warning_that_says_why_and_names_the_fix(
        monkeypatch, log_warnings):
    from tfloop.input import graph_dataset
    x, y = make_regression_data(12)

    def padded():
        return tf.data.Dataset.from_tensor_slices((x, y)).padded_batch(4)

    tfloop.DatasetInput(padded())
    assert log_warnings == []
    monkeypatch.setattr(graph_dataset, "LARGE_DEFINITION_BYTES", 100)
    tfloop.DatasetInput(tf.data.Dataset.from_tensor_slices((x, y)).batch(4))   # not serialized
    assert log_warnings == []
    tfloop.DatasetInput(padded())
    warning, = log_warnings
    assert warning.startswith(
        "DatasetInput: this eagerly built tf.data.Dataset holds 0 MB of data, which TensorFlow "
        "copies several times to bring it into the training graph (about 1 s per 100 MB): tfloop "
        "brings in the arrays of an eager pipeline without this copy only when it knows every "
        "stage, and this one has its _PaddedBatchDataset stage, which tfloop does not rebuild. "
        "Pass the function that builds it instead")
    assert "data=lambda: tf.data.Dataset.from_tensor_slices((x, y))" in warning
