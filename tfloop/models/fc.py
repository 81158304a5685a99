"""FullyConnected: a dense layer on ``tf.matmul``, with tensorpack's names (``fc/W``, ``fc/b``)."""
import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.models.layer_args import (
    convert_args,
    default_kernel_initializer,
    finish_output,
    new_variable,
)
from tfloop.models.registry import VariableHolder, layer_register

__all__ = ["FullyConnected", "batch_flatten"]


def batch_flatten(x):
    """``x`` reshaped to 2D ``[batch, everything else]``.

    Example:
        >>> batch_flatten(images).shape      # [None, 28 * 28]
    """
    shape = x.shape.as_list()[1:]
    if None not in shape:
        return tf.reshape(x, [-1, int(np.prod(shape))])
    return tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))


@layer_register(log_shape=True)
@convert_args({"out_dim": "units"})
def FullyConnected(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
                   bias_initializer=None, kernel_regularizer=None, bias_regularizer=None,
                   activity_regularizer=None):
    """``activation(flatten(x) @ W + b)``, the output named ``<name>/output``.

    An input of rank > 2 is flattened first. The default kernel initializer is variance scaling
    with scale 2, as tensorpack's; ``out_dim``, ``nl``, ``W_init``, ``b_init`` are accepted.

    Variables: ``W`` of shape ``[in_dim, units]``; ``b``.

    Example:
        >>> logits = FullyConnected("fc", x, 10)
        >>> logits.variables.W.shape     # [in_dim, 10]
    """
    if inputs.shape.rank is None or inputs.shape.rank < 2:
        raise ValueError(f"FullyConnected needs an input of rank >= 2 (batch first), got shape "
                         f"{inputs.shape}.")
    in_dim = inputs.shape[1:].num_elements()
    if in_dim is None:
        raise ValueError(f"FullyConnected needs the non-batch dimensions of its input known, got "
                         f"shape {inputs.shape}.")
    x = batch_flatten(inputs)
    W = new_variable("W", [in_dim, units], kernel_initializer or default_kernel_initializer(),
                     kernel_regularizer, dtype=inputs.dtype)
    y = tf.matmul(x, W)
    variables = VariableHolder(W=W)
    if use_bias:
        variables.b = new_variable("b", [units], bias_initializer or tfv1.zeros_initializer(),
                                   bias_regularizer, dtype=inputs.dtype)
        y = tf.nn.bias_add(y, variables.b)
    y = finish_output(y, activation, activity_regularizer)
    y.variables = variables
    return y
