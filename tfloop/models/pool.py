"""Pooling layers: MaxPooling, AvgPooling, GlobalAvgPooling and FixedUnPooling (tensorpack's)."""
import numpy as np

from tfloop.compat import tf
from tfloop.models.layer_args import (
    convert_args,
    data_format_of,
    padding_of,
    run_in_layout,
    shape2d,
    shape4d,
)
from tfloop.models.registry import layer_register

__all__ = ["AvgPooling", "FixedUnPooling", "GlobalAvgPooling", "MaxPooling"]

_POOL_ALIASES = {"shape": "pool_size", "stride": "strides"}


def _pool(op, layer, inputs, pool_size, strides, padding, data_format):
    data_format = data_format_of(data_format, layer)
    if inputs.shape.rank != 4:
        raise ValueError(f"{layer} needs a 4D input ({data_format}), got shape {inputs.shape}.")
    size = shape2d(pool_size, "pool_size", layer)
    stride = size if strides is None else shape2d(strides, "strides", layer)
    padding = padding_of(padding, layer)
    y = run_in_layout(inputs, data_format, lambda x, fmt: op(
        x, shape4d(size, fmt), shape4d(stride, fmt), padding, data_format=fmt))
    return tf.identity(y, name="output")


@layer_register(log_shape=True)
@convert_args(_POOL_ALIASES)
def MaxPooling(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    """Max pooling; ``strides`` defaults to ``pool_size``. Output named ``<name>/output``.

    Example:
        >>> x = MaxPooling("pool0", x, 2)          # [N, H/2, W/2, C]
    """
    return _pool(tf.nn.max_pool2d, "MaxPooling", inputs, pool_size, strides, padding,
                 data_format)


@layer_register(log_shape=True)
@convert_args(_POOL_ALIASES)
def AvgPooling(inputs, pool_size, strides=None, padding="valid", data_format="channels_last"):
    """Average pooling; ``strides`` defaults to ``pool_size``. Output named ``<name>/output``.

    Example:
        >>> x = AvgPooling("pool0", x, 2)
    """
    return _pool(tf.nn.avg_pool2d, "AvgPooling", inputs, pool_size, strides, padding,
                 data_format)


@layer_register(log_shape=True)
@convert_args()
def GlobalAvgPooling(x, data_format="channels_last"):
    """The mean over the spatial dimensions of a 4D tensor: an ``[N, C]`` tensor named ``output``.

    Example:
        >>> feature = GlobalAvgPooling("gap", x)
    """
    data_format = data_format_of(data_format, "GlobalAvgPooling")
    if x.shape.rank != 4:
        raise ValueError(f"GlobalAvgPooling needs a 4D input, got shape {x.shape}.")
    axis = [1, 2] if data_format == "NHWC" else [2, 3]
    return tf.reduce_mean(x, axis, name="output")


@layer_register(log_shape=True)
@convert_args()
def FixedUnPooling(x, shape, unpool_mat=None, data_format="channels_last"):
    """Unpool each pixel into a ``shape`` block: the Kronecker product with ``unpool_mat``.

    Args:
        x (tf.Tensor): 4D.
        shape: int or (h, w): the block size.
        unpool_mat: a 2D array or tensor of size ``shape``; by default 1 at the top-left corner
            and 0 elsewhere.

    Example:
        >>> y = FixedUnPooling("unpool", x, 2)     # [N, 2H, 2W, C], zeros between pixels
    """
    layer = "FixedUnPooling"
    data_format = data_format_of(data_format, layer)
    if x.shape.rank != 4:
        raise ValueError(f"{layer} needs a 4D input, got shape {x.shape}.")
    block = shape2d(shape, "shape", layer)
    if unpool_mat is None:
        mat = np.zeros(block, dtype=x.dtype.as_numpy_dtype)
        mat[0, 0] = 1
        unpool_mat = mat
    unpool_mat = tf.convert_to_tensor(unpool_mat, dtype=x.dtype, name="unpool_mat")
    if unpool_mat.shape.as_list() != block:
        raise ValueError(f"{layer}: unpool_mat has shape {unpool_mat.shape.as_list()}, but shape="
                         f"{shape!r} needs {block}.")
    if data_format == "NHWC":
        x = tf.transpose(x, [0, 3, 1, 2])
    static, dynamic = x.shape.as_list(), tf.shape(x)
    # [N, C, H, W, 1] x [1, bh, bw] -> [N, C, H, W, bh, bw] -> [N, C, H, bh, W, bw]
    y = tf.tensordot(tf.expand_dims(x, -1), tf.expand_dims(unpool_mat, 0), axes=1)
    y = tf.transpose(y, [0, 1, 2, 4, 3, 5])
    y = tf.reshape(y, tf.stack([-1, dynamic[1], dynamic[2] * block[0], dynamic[3] * block[1]]))
    y.set_shape([None, static[1]] + [None if static[2 + i] is None else static[2 + i] * block[i]
                                     for i in range(2)])
    if data_format == "NHWC":
        y = tf.transpose(y, [0, 2, 3, 1])
    y.set_shape([x.shape[0]] + y.shape.as_list()[1:])
    return tf.identity(y, name="output")
