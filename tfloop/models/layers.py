"""Layers for tower functions, built on ``tf.compat.v1.get_variable`` so that towers share them.

Keras 3 layers do not take part in ``tf.compat.v1`` variable scopes, so a second tower (an
inference tower, or another device) would create a second set of weights. These layers create
their variables with ``get_variable`` under ``variable_scope(name)`` and read the tower context to
know whether they are training. Names and arguments follow tensorpack's layers.

Example:
    >>> def build_graph(self, image, label):
    ...     x = Conv2D("conv0", image, 32, 3, activation=tf.nn.relu)
    ...     x = MaxPooling("pool0", x, 2)
    ...     logits = FullyConnected("fc", x, 10)
"""
import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.tower import get_current_tower_context

__all__ = ["Conv2D", "FullyConnected", "MaxPooling", "BatchNorm", "Dropout"]


def _is_training(training):
    if training is not None:
        return bool(training)
    ctx = get_current_tower_context()
    return ctx is not None and ctx.is_training


def _kernel_initializer(initializer):
    return initializer if initializer is not None else \
        tfv1.variance_scaling_initializer(scale=2.0, distribution="untruncated_normal")


def _activate(x, activation, name):
    return tf.identity(x, name=name) if activation is None else activation(x, name=name)


def Conv2D(name, x, filters, kernel_size, strides=1, padding="same", activation=None,
           use_bias=True, kernel_initializer=None):
    """2D convolution over NHWC input: ``activation(conv(x, W) + b)``; output named ``<name>/output``.

    Args:
        filters (int): output channels. kernel_size, strides (int or pair).
        padding (str): ``"same"`` or ``"valid"``.
    """
    kernel = [kernel_size] * 2 if isinstance(kernel_size, int) else list(kernel_size)
    stride = [strides] * 2 if isinstance(strides, int) else list(strides)
    in_channels = x.shape[-1]
    if in_channels is None:
        raise ValueError("Conv2D {!r} needs a known number of input channels, got shape {}.".format(
            name, x.shape))
    with tfv1.variable_scope(name):
        w = tfv1.get_variable("W", kernel + [in_channels, filters],
                              initializer=_kernel_initializer(kernel_initializer))
        y = tf.nn.conv2d(x, w, strides=[1] + stride + [1], padding=padding.upper())
        if use_bias:
            y = tf.nn.bias_add(y, tfv1.get_variable("b", [filters],
                                                    initializer=tfv1.zeros_initializer()))
        return _activate(y, activation, "output")


def FullyConnected(name, x, units, activation=None, use_bias=True, kernel_initializer=None):
    """A dense layer; input of rank > 2 is flattened first. Output named ``<name>/output``."""
    if x.shape.rank is None or x.shape.rank < 2:
        raise ValueError("FullyConnected {!r} needs an input of rank >= 2, got shape {}.".format(
            name, x.shape))
    in_dim = x.shape[1:].num_elements()
    if in_dim is None:
        raise ValueError("FullyConnected {!r} needs fully known non-batch dimensions, got {}.".format(
            name, x.shape))
    x = tf.reshape(x, [-1, in_dim])
    with tfv1.variable_scope(name):
        w = tfv1.get_variable("W", [in_dim, units],
                              initializer=_kernel_initializer(kernel_initializer))
        y = tf.matmul(x, w)
        if use_bias:
            y = tf.nn.bias_add(y, tfv1.get_variable("b", [units],
                                                    initializer=tfv1.zeros_initializer()))
        return _activate(y, activation, "output")


def MaxPooling(name, x, pool_size, strides=None, padding="valid"):
    """Max pooling over NHWC input; ``strides`` defaults to ``pool_size``."""
    strides = pool_size if strides is None else strides
    with tf.name_scope(name):
        return tf.nn.max_pool2d(x, pool_size, strides, padding.upper(), name="output")


def Dropout(name, x, rate=0.5, training=None):
    """Dropout while training (from the tower context unless ``training`` is given), identity
    otherwise."""
    with tf.name_scope(name):
        if not _is_training(training) or rate == 0:
            return tf.identity(x, name="output")
        return tf.identity(tf.nn.dropout(x, rate=rate), name="output")


def BatchNorm(name, x, momentum=0.9, epsilon=1e-5, training=None):
    """Batch normalisation over the last axis.

    While training, normalises with the batch's statistics and adds the moving-average updates to
    ``UPDATE_OPS`` (run by ``RunUpdateOps``, a default callback) — only in the main training tower;
    otherwise uses the moving averages.
    """
    channels = x.shape[-1]
    if channels is None:
        raise ValueError("BatchNorm {!r} needs a known last dimension, got shape {}.".format(
            name, x.shape))
    axes = list(range(x.shape.rank - 1))
    with tfv1.variable_scope(name):
        beta = tfv1.get_variable("beta", [channels], initializer=tfv1.zeros_initializer())
        gamma = tfv1.get_variable("gamma", [channels], initializer=tfv1.ones_initializer())
        moving_mean = tfv1.get_variable("mean/EMA", [channels], trainable=False,
                                        initializer=tfv1.zeros_initializer())
        moving_var = tfv1.get_variable("variance/EMA", [channels], trainable=False,
                                       initializer=tfv1.ones_initializer())
        if not _is_training(training):
            return tf.nn.batch_normalization(x, moving_mean, moving_var, beta, gamma, epsilon,
                                             name="output")
        mean, variance = tf.nn.moments(x, axes)
        ctx = get_current_tower_context()
        if ctx is None or ctx.is_main_training_tower:
            decay = np.float32(momentum)
            tfv1.add_to_collection(tfv1.GraphKeys.UPDATE_OPS, tfv1.assign_sub(
                moving_mean, (1 - decay) * (moving_mean - mean), name="update_mean"))
            tfv1.add_to_collection(tfv1.GraphKeys.UPDATE_OPS, tfv1.assign_sub(
                moving_var, (1 - decay) * (moving_var - variance), name="update_variance"))
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, epsilon, name="output")
