"""Train a small convnet with tensorpack 0.11 and write its checkpoint and outputs (run by
test_tensorpack_checkpoint.py in a subprocess: ``python tensorpack_convnet.py OUT_DIR``).

TensorFlow 2.21 with Keras 3 has no ``tf.compat.v1.layers`` classes, which tensorpack's Conv2D,
FullyConnected, MaxPooling and BatchNorm call; the classes below stand in for them with the
variable names ``tf.layers`` gave (``kernel``, ``bias``, ``moving_mean``, …), which tensorpack
renames to its own (``W``, ``b``, ``mean/EMA``, …). Everything else is tensorpack's own code:
its layers, argscope, tower contexts, trainer and ModelSaver.
"""
import os
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

tfv1 = tf.compat.v1


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _initializer(init):
    if init is None or "VarianceScaling" in type(init).__name__:  # tensorpack's default
        return tfv1.variance_scaling_initializer(2.0, distribution="untruncated_normal")
    return init


class _Conv2D:
    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", activation=None,
                 use_bias=True, kernel_initializer=None, bias_initializer=None, **_):
        self.args = (filters, _pair(kernel_size), _pair(strides), padding.upper(), activation,
                     use_bias, _initializer(kernel_initializer), bias_initializer)

    def apply(self, x, scope=None):
        filters, kernel, strides, padding, activation, use_bias, k_init, b_init = self.args
        self.kernel = tfv1.get_variable("kernel", kernel + [x.shape[-1], filters],
                                        initializer=k_init)
        y = tf.nn.conv2d(x, self.kernel, [1] + strides + [1], padding)
        if use_bias:
            self.bias = tfv1.get_variable("bias", [filters], initializer=b_init)
            y = tf.nn.bias_add(y, self.bias)
        return activation(y) if activation is not None else y


class _Dense:
    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=None, **_):
        self.args = (units, activation, use_bias, _initializer(kernel_initializer),
                     bias_initializer)

    def apply(self, x, scope=None):
        units, activation, use_bias, k_init, b_init = self.args
        self.kernel = tfv1.get_variable("kernel", [x.shape[-1], units], initializer=k_init)
        y = tf.matmul(x, self.kernel)
        if use_bias:
            self.bias = tfv1.get_variable("bias", [units], initializer=b_init)
            y = tf.nn.bias_add(y, self.bias)
        return activation(y) if activation is not None else y


class _MaxPooling2D:
    def __init__(self, pool_size, strides, padding="valid", **_):
        self.args = (_pair(pool_size), _pair(strides), padding.upper())

    def apply(self, x, scope=None):
        size, strides, padding = self.args
        return tf.nn.max_pool2d(x, [1] + size + [1], [1] + strides + [1], padding)


class _BatchNormalization:
    def __init__(self, axis, momentum, epsilon, center, scale, beta_initializer,
                 gamma_initializer, **_):
        self.args = (momentum, epsilon, beta_initializer, gamma_initializer)
        self.updates = []

    def apply(self, x, training=False, scope=None):
        momentum, epsilon, b_init, g_init = self.args
        n = x.shape[-1]
        self.beta = tfv1.get_variable("beta", [n], initializer=b_init)
        self.gamma = tfv1.get_variable("gamma", [n], initializer=g_init)
        self.moving_mean = tfv1.get_variable("moving_mean", [n], trainable=False,
                                             initializer=tfv1.zeros_initializer())
        self.moving_variance = tfv1.get_variable("moving_variance", [n], trainable=False,
                                                 initializer=tfv1.ones_initializer())
        self.non_trainable_variables = [self.moving_mean, self.moving_variance]
        if not training:
            return tf.nn.batch_normalization(x, self.moving_mean, self.moving_variance,
                                             self.beta, self.gamma, epsilon)
        mean, var = tf.nn.moments(x, list(range(x.shape.rank - 1)))
        for moving, value in [(self.moving_mean, mean), (self.moving_variance, var)]:
            op = tfv1.assign_sub(moving, (moving - value) * (1 - momentum))
            self.updates.append(op)
            tfv1.add_to_collection(tfv1.GraphKeys.UPDATE_OPS, op)
        return tf.nn.batch_normalization(x, mean, var, self.beta, self.gamma, epsilon)


tfv1.layers = types.SimpleNamespace(Conv2D=_Conv2D, Dense=_Dense, MaxPooling2D=_MaxPooling2D,
                                    BatchNormalization=_BatchNormalization)

from tensorpack import (
    BatchNorm,
    Conv2D,
    Conv2DTranspose,
    DataFromList,
    Dropout,
    FullyConnected,
    LayerNorm,
    MaxPooling,
    ModelDesc,
    ModelSaver,
    PReLU,
    SimpleTrainer,
    SmartInit,
    TowerContext,
    TrainConfig,
    argscope,
    launch_train_with_config,
)
from tensorpack.utils import logger


def convnet(image):
    """The model; test_tensorpack_checkpoint.py builds the same one with tfloop's layers."""
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


class Model(ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 8, 8, 1], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        logits = tf.identity(convnet(image), name="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

    def optimizer(self):
        return tfv1.train.AdamOptimizer(0.01)


def outputs(checkpoint, images, training):
    """The model's logits on ``images`` restored from ``checkpoint``, in a tower that trains or
    not (dropout is off in both)."""
    with tf.Graph().as_default():
        image = tfv1.placeholder(tf.float32, [None, 8, 8, 1])
        with TowerContext("", is_training=training):
            with argscope(Dropout, is_training=False):
                logits = convnet(image)
        with tfv1.Session() as sess:
            SmartInit(checkpoint).init(sess)
            return sess.run(logits, {image: images})


def main(out_dir):
    logger.set_logger_dir(os.path.join(out_dir, "log"), action="d")
    rng = np.random.RandomState(0)
    data = [[rng.rand(4, 8, 8, 1).astype(np.float32), rng.randint(0, 3, 4).astype(np.int32)]
            for _ in range(5)]
    config = TrainConfig(model=Model(), dataflow=DataFromList(data, shuffle=False),
                         callbacks=[ModelSaver(checkpoint_dir=out_dir)], max_epoch=2,
                         steps_per_epoch=5)
    launch_train_with_config(config, SimpleTrainer())
    checkpoint = tfv1.train.latest_checkpoint(out_dir)
    images = rng.rand(3, 8, 8, 1).astype(np.float32)
    np.savez(os.path.join(out_dir, "outputs.npz"), images=images,
             inference=outputs(checkpoint, images, False),
             training=outputs(checkpoint, images, True), checkpoint=checkpoint)


if __name__ == "__main__":
    main(sys.argv[1])
