"""An empty batch gives an empty result, with zero gradients, in every layer and data format,
whether TensorFlow's CPU kernels are oneDNN's or not.

oneDNN (TensorFlow's default on recent x86 servers) gets an empty batch wrong in its own kernels:
a convolution answers with its input's shape and max pooling's gradient aborts the process. The
suite itself runs with whatever this machine has; the subprocess test runs both settings here.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from support import scaled_timeout

from tfloop import (
    AvgPooling,
    BatchNorm,
    Conv2D,
    Conv2DTranspose,
    FullyConnected,
    MaxPooling,
    argscope,
)
from tfloop.compat import tf, tfv1

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAYERS = [Conv2D, Conv2DTranspose, MaxPooling, AvgPooling, BatchNorm]


def empty_batch_results(data_format):
    """Each layer's output shape and the largest gradient magnitude, on a batch of 0 images."""
    with tf.Graph().as_default():
        shape = [None, 4, 8, 8] if data_format == "channels_first" else [None, 8, 8, 4]
        x = tfv1.placeholder(tf.float32, shape)
        with argscope(LAYERS, data_format=data_format):
            y = Conv2D("conv", x, 6, 3, strides=2, activation=tf.nn.relu)
            y = Conv2D("group", y, 6, 3, split=2)
            y = MaxPooling("max", y, 2, strides=1, padding="same")
            y = BatchNorm("bn", y)
            y = Conv2DTranspose("deconv", y, 3, 2, strides=2)
            y = AvgPooling("avg", y, 2)
        logits = FullyConnected("fc", y, 5)
        cost = tf.reduce_sum(logits)
        grads = tf.gradients(cost, [x] + tfv1.trainable_variables())
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            images = np.zeros((0, 4, 8, 8) if data_format == "channels_first" else (0, 8, 8, 4),
                              np.float32)
            out, fc_out, *values = sess.run([y, logits] + grads, {x: images})
    return {"conv_out": list(out.shape), "fc_out": list(fc_out.shape),
            "grad_max": max(float(np.abs(v).max(initial=0.0)) for v in values)}


EXPECTED = {
    "channels_first": {"conv_out": [0, 3, 4, 4], "fc_out": [0, 5], "grad_max": 0.0},
    "channels_last": {"conv_out": [0, 4, 4, 3], "fc_out": [0, 5], "grad_max": 0.0},
}


@pytest.mark.parametrize("data_format", ["channels_first", "channels_last"])
def test_an_empty_batch_gives_an_empty_result_with_this_machines_kernels(data_format):
    assert empty_batch_results(data_format) == EXPECTED[data_format]


def test_a_non_empty_batch_is_unchanged_by_the_guard():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 5, 5, 2])
        y = Conv2D("conv", x, 3, 3, kernel_initializer=tfv1.ones_initializer(), use_bias=False)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(y, {x: np.ones((2, 5, 5, 2), np.float32)})
    assert out.shape == (2, 5, 5, 3)
    assert out[0, 2, 2, 0] == 18.0 and out[1, 0, 0, 0] == 8.0


@pytest.mark.slow
@pytest.mark.parametrize("onednn", ["0", "1"])
def test_an_empty_batch_gives_an_empty_result_with_onednn_on_and_off(onednn):
    script = textwrap.dedent(f"""
        import json
        import test_empty_batch as t
        from tfloop.compat import onednn_enabled
        assert onednn_enabled() == {onednn == "1"}
        print(json.dumps({{f: t.empty_batch_results(f) for f in t.EXPECTED}}))
    """)
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=onednn, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(filter(None, [TESTS, os.path.join(TESTS, "models"),
                                                        os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=scaled_timeout(120))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1]) == EXPECTED


def guard_rounding():
    """A Conv2D with bias and ReLU built with the guard (unknown batch) and without (batch 8):
    the largest relative difference of its output and of its kernel and bias gradients."""
    rng = np.random.RandomState(0)
    images = rng.randn(8, 16, 16, 3).astype(np.float32)
    kernel = rng.randn(3, 3, 3, 8).astype(np.float32)
    results = []
    for batch in (None, 8):
        with tf.Graph().as_default():
            x = tfv1.placeholder(tf.float32, [batch, 16, 16, 3])
            y = Conv2D("conv", x, 8, 3, activation=tf.nn.relu,
                       kernel_initializer=tfv1.constant_initializer(kernel),
                       bias_initializer=tfv1.constant_initializer(0.1))
            grads = tf.gradients(tf.reduce_sum(y * y), [y.variables.W, y.variables.b])
            with tfv1.Session() as sess:
                sess.run(tfv1.global_variables_initializer())
                results.append(sess.run([y] + grads, {x: images}))
    return {name: float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))
            for name, a, b in zip(["output", "kernel_grad", "bias_grad"], *results)}


@pytest.mark.slow
def test_the_guard_changes_a_convolution_at_rounding_level_with_onednn():
    """What guard_empty_batch's docstring says: under oneDNN the guard costs the bias gradient
    its fusion with the filter gradient, and nothing beyond rounding."""
    script = textwrap.dedent("""
        import json
        import test_empty_batch as t
        from tfloop.compat import onednn_enabled
        assert onednn_enabled()
        print(json.dumps(t.guard_rounding()))
    """)
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1", TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join(filter(None, [TESTS, os.path.join(TESTS, "models"),
                                                        os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, timeout=scaled_timeout(120))
    assert result.returncode == 0, result.stderr[-3000:]
    differences = json.loads(result.stdout.strip().splitlines()[-1])
    assert all(value <= 1e-5 for value in differences.values()), differences
