"""Regularizers, regularize_cost(_from_collection), Dropout's tensorpack meaning, and
rename_tflayer_get_variable."""
import numpy as np
import pytest

from tfloop import (
    Dropout,
    FullyConnected,
    TowerContext,
    l1_regularizer,
    l2_regularizer,
    regularize_cost,
    regularize_cost_from_collection,
    rename_tflayer_get_variable,
)
from tfloop.compat import tf, tfv1


def run(fetch, feed=None):
    with tfv1.Session() as sess:
        sess.run(tfv1.global_variables_initializer())
        return sess.run(fetch, feed)


def test_regularizers_match_tensorpacks_scale():
    with tf.Graph().as_default():
        w = tf.constant([[1.0, -2.0], [3.0, 0.5]])
        l2, l1 = run([l2_regularizer(0.1)(w), l1_regularizer(0.1)(w)])
    np.testing.assert_allclose([l2, l1], [0.1 * 14.25 / 2, 0.1 * 6.5], rtol=1e-6)


def test_regularize_cost_selects_by_regex_and_is_zero_at_inference(log_lines):
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 3])
        with TowerContext("", is_training=True):
            y = FullyConnected("fc0", x, 2, W_init=tf.constant_initializer(1.0))
            FullyConnected("out", y, 1, W_init=tf.constant_initializer(2.0))
            cost = regularize_cost("fc.*/W", tf.nn.l2_loss)
            everything = regularize_cost(".*/W", l1_regularizer(1.0), name="wd")
            none = regularize_cost("nothing", tf.nn.l2_loss)
        with TowerContext("infer", is_training=False):
            zero = regularize_cost(".*", tf.nn.l2_loss)
        assert everything.name == "wd:0"
        assert run([cost, everything, none, zero]) == [3.0, 10.0, 0.0, 0.0]
    assert log_lines.count("regularize_cost() found 1 variables to regularize.") == 1
    assert "The following tensors will be regularized: fc0/W" in log_lines


def test_regularize_cost_in_a_replicated_tower_counts_its_own_variables():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 3])
        costs = []
        for i in range(2):
            with TowerContext(f"tower{i}", is_training=True, index=i,
                              vs_name="tower1" if i else ""):
                FullyConnected("fc", x, 1, W_init=tf.constant_initializer(float(i + 1)))
                costs.append(regularize_cost("fc/W", l1_regularizer(1.0)))
                costs.append(regularize_cost_from_collection())
        assert run(costs) == [3.0, 0.0, 6.0, 0.0]  # tower 1: only tower1/fc/W


def test_regularize_cost_from_collection():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 3])
        with TowerContext("", is_training=True):
            FullyConnected("fc", x, 2, W_init=tf.constant_initializer(1.0),
                           kernel_regularizer=l2_regularizer(1.0),
                           bias_regularizer=l1_regularizer(1.0),
                           b_init=tf.constant_initializer(-1.0))
            cost = regularize_cost_from_collection()
        with TowerContext("infer", is_training=False):
            zero = regularize_cost_from_collection()
        assert run([cost, zero]) == [3.0 + 2.0, 0.0]


def dropped_fraction(build, training=True):
    with tf.Graph().as_default():
        x = tf.ones([100, 100])
        with TowerContext("", is_training=training):
            y = build(x)
        return float(np.mean(run(y) == 0)), y


@pytest.mark.parametrize("build,fraction", [
    (lambda x: Dropout("drop", x, 0.8), 0.2),                    # positional: keep 80%
    (lambda x: Dropout("drop", x, keep_prob=0.3), 0.7),
    (lambda x: Dropout("drop", x, rate=0.3), 0.3),
    (lambda x: Dropout(x), 0.5),                                 # no name, keep 50%
])
def test_dropout_keeps_keep_prob_of_the_units(build, fraction):
    seen, y = dropped_fraction(build)
    assert abs(seen - fraction) < 0.03
    assert y.op.name.endswith("output")


def test_dropout_is_identity_outside_training_and_when_told(log_warnings):
    seen, y = dropped_fraction(lambda x: Dropout("drop", x, 0.5), training=False)
    assert seen == 0.0 and y.name == "drop/output:0"
    seen, _ = dropped_fraction(lambda x: Dropout("drop", x, 0.5, is_training=False))
    assert seen == 0.0
    seen, _ = dropped_fraction(lambda x: Dropout("drop", x, 0.8))
    assert any("probability to KEEP" in w for w in log_warnings)


def test_dropout_argument_errors():
    with tf.Graph().as_default():
        x = tf.ones([2, 2])
        with pytest.raises(TypeError, match="got both keep_prob and rate"):
            Dropout("d", x, keep_prob=0.5, rate=0.5)
        with pytest.raises(ValueError, match=r"keep_prob must be in \(0, 1\], got 0"):
            Dropout("d", x, 0)
        with pytest.raises(TypeError, match="unexpected argument"):
            Dropout("d", x, drop=0.5)


def test_rename_tflayer_get_variable():
    with tf.Graph().as_default():
        with tfv1.variable_scope("conv0"), rename_tflayer_get_variable():
            names = [tfv1.get_variable(n, [1]).op.name for n in
                     ("kernel", "bias", "moving_mean", "moving_variance", "other")]
    assert names == ["conv0/W", "conv0/b", "conv0/mean/EMA", "conv0/variance/EMA", "conv0/other"]


def test_dropout_rate_can_be_a_tensor_as_in_cifar_convnet():
    seen, _ = dropped_fraction(lambda x: Dropout(x, rate=tf.constant(0.25)))
    assert abs(seen - 0.25) < 0.03
    seen, _ = dropped_fraction(lambda x: Dropout(x, rate=tf.constant(0.0)))
    assert seen == 0.0
