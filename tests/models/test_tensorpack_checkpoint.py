"""A checkpoint that tensorpack 0.11 trained restores into the same convnet built with tfloop's
layers, and gives the same outputs in an inference tower and in a training tower.

tensorpack runs in a subprocess (``tensorpack_convnet.py``: its trainer, layers, argscope and
ModelSaver; stand-ins only for the ``tf.layers`` classes Keras 3 removed)."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from support import scaled_timeout

import tfloop
from tfloop import (
    BatchNorm,
    Conv2D,
    Conv2DTranspose,
    Dropout,
    FullyConnected,
    LayerNorm,
    MaxPooling,
    PReLU,
    TowerContext,
    argscope,
)
from tfloop.compat import tf, tfv1

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    importlib.util.find_spec("tensorpack") is None,
    reason="tensorpack 0.11 (the test extra) is not installed")]

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tensorpack_convnet.py")


def convnet(image):
    """tensorpack_convnet.convnet, line for line, with tfloop's layers."""
    with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu, filters=4):
        x = Conv2D("conv0", image)
        x = BatchNorm("bn0", x)
        x = MaxPooling("pool0", x, 2)
        x = Conv2D("conv1", x, padding="valid", nl=tf.identity)
        x = Conv2DTranspose("deconv", x, 3, 2, strides=2)
        x = LayerNorm("ln", x)
        x = PReLU("prelu", x)
    x = FullyConnected("fc0", x, 8, activation=tf.nn.tanh)
    x = Dropout("drop", x, 0.5)
    return FullyConnected("fc1", x, 3)


@pytest.fixture(scope="module")
def tensorpack_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("tensorpack")
    run = subprocess.run([sys.executable, SCRIPT, str(out)], capture_output=True, text=True,
                         check=False, timeout=scaled_timeout(80), cwd=str(out))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return dict(np.load(str(out / "outputs.npz")))


def tfloop_outputs(checkpoint, images, training):
    with tf.Graph().as_default():
        image = tfv1.placeholder(tf.float32, [None, 8, 8, 1])
        with TowerContext("", is_training=training):
            with argscope(Dropout, is_training=False):
                logits = convnet(image)
        names = sorted(v.op.name for v in tfv1.global_variables())
        restore = tfloop.SaverRestore(checkpoint)
        restore.setup_graph()
        with tfv1.Session() as sess:
            restore.init(sess)
            return names, sess.run(logits, {image: images})


def test_the_variable_names_are_tensorpacks(tensorpack_run):
    checkpoint = str(tensorpack_run["checkpoint"])
    in_checkpoint = sorted(name for name, _ in tfv1.train.list_variables(checkpoint)
                           if "Adam" not in name and name not in
                           ("beta1_power", "beta2_power", "global_step"))
    names, _ = tfloop_outputs(checkpoint, tensorpack_run["images"], False)
    assert names == in_checkpoint
    assert {"bn0/mean/EMA", "bn0/variance/EMA", "conv0/W", "fc1/b", "prelu/alpha"} <= set(names)


@pytest.mark.parametrize("mode", ["inference", "training"])
def test_same_outputs_as_tensorpack(tensorpack_run, mode):
    _, logits = tfloop_outputs(str(tensorpack_run["checkpoint"]), tensorpack_run["images"],
                               mode == "training")
    np.testing.assert_allclose(logits, tensorpack_run[mode], rtol=1e-4, atol=1e-5)
