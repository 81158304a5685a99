"""TrainConfig(seed=...): two seeded CPU runs give bit-identical checkpoints (tf.data input, a
Python DataFlow, dropout, random initializers, a global seed set before launching)."""
import logging
import os

import numpy as np
import pytest
from support import make_regression_data
from tensorflow.python.framework import config as tf_config

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.utils import logger
from tfloop.utils.rng import fix_rng_seed


@pytest.fixture(autouse=True)
def _no_op_determinism_after():
    """Op determinism is process-wide (conftest resets the seeds)."""
    yield
    tf_config.disable_op_determinism()


class DropoutModel(tfloop.ModelDesc):
    """A random initializer, dropout on the inputs, plain SGD."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3, 8])  # glorot-uniform: random
        hidden = tf.nn.dropout(tf.matmul(x, w), rate=0.5)
        pred = tf.reduce_sum(hidden, 1)
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.01)


def tf_data():
    x, y = make_regression_data(24)
    return tfloop.DatasetInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).shuffle(24).batch(4))


def python_dataflow():
    x, y = make_regression_data(24)
    return tfloop.BatchData(tfloop.DataFromList([[a, b] for a, b in zip(x, y)]), 4)


def train_weights(tmp_path, name, data, **config_kwargs):
    """Train 2 epochs into ``tmp_path/name``; return the final checkpoint's variables."""
    logdir = str(tmp_path / name)
    logger.set_logger_dir(logdir, action="keep")
    try:
        config = tfloop.TrainConfig(model=DropoutModel(), data=data, max_epoch=2,
                                    callbacks=[tfloop.ModelSaver()], extra_callbacks=[],
                                    monitors=[], **config_kwargs)
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    return tfloop.load_chkpt_vars(os.path.join(logdir, "model-12"))


def assert_bit_identical(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name].tobytes() == b[name].tobytes(), name


@pytest.mark.slow
@pytest.mark.parametrize("make_data", [tf_data, python_dataflow])
def test_two_seeded_runs_are_bit_identical_and_unseeded_ones_differ(tmp_path, make_data):
    first = train_weights(tmp_path, "a", make_data(), seed=7)
    second = train_weights(tmp_path, "b", make_data(), seed=7)
    assert_bit_identical(first, second)
    fix_rng_seed(None)
    unseeded = train_weights(tmp_path, "c", make_data())
    assert unseeded["w"].tobytes() != first["w"].tobytes()


@pytest.mark.slow
def test_a_global_seed_set_before_launching_is_honoured(tmp_path):
    tf.random.set_seed(3)
    first = train_weights(tmp_path, "a", tf_data())
    tf.random.set_seed(3)
    second = train_weights(tmp_path, "b", tf_data())
    assert_bit_identical(first, second)
    tf.random.set_seed(4)
    other = train_weights(tmp_path, "c", tf_data())
    assert other["w"].tobytes() != first["w"].tobytes()


def test_the_seed_is_the_graphs_and_deterministic_turns_on_op_determinism():
    config = tfloop.TrainConfig(model=DropoutModel(), data=tf_data(), max_epoch=1, seed=5,
                                deterministic=True, extra_callbacks=[], monitors=[])
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    assert trainer.graph.seed == 5
    assert tf_config.is_op_determinism_enabled()
    assert (np.random.randint(1 << 30), ) == (np.random.RandomState(5).randint(1 << 30), )


def test_an_eager_dataset_with_an_unseeded_shuffle_gets_a_warning_naming_the_fix(caplog):
    x, y = make_regression_data(8)
    unseeded = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(8).batch(4)
    config = tfloop.TrainConfig(model=DropoutModel(), data=tfloop.DatasetInput(unseeded),
                                max_epoch=1, seed=1, extra_callbacks=[], monitors=[])
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    assert "seed=1 does not reach the shuffle of a tf.data.Dataset built eagerly" in caplog.text
    assert "Pass the function that builds the dataset instead" in caplog.text


def test_an_eager_dataset_seeded_by_the_global_seed_gets_no_warning(caplog):
    tf.random.set_seed(2)
    x, y = make_regression_data(8)
    seeded = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(8).batch(4)
    config = tfloop.TrainConfig(model=DropoutModel(), data=tfloop.DatasetInput(seeded),
                                max_epoch=1, extra_callbacks=[], monitors=[])
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    assert "does not reach the shuffle" not in caplog.text


@pytest.mark.parametrize("seed,error,match", [
    ("0", TypeError, r"TrainConfig: seed must be an int \(e.g. seed=0\) or None, got '0' \(str\)"),
    (1.5, TypeError, "got 1.5 \\(float\\)"),
    (-1, ValueError, r"must be in \[0, 2\*\*32\), got -1"),
])
def test_a_seed_that_is_not_an_int_is_refused(seed, error, match):
    with pytest.raises(error, match=match):
        tfloop.TrainConfig(model=DropoutModel(), data=tf_data(), seed=seed)
