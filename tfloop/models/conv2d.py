"""Conv2D and Conv2DTranspose (alias Deconv2D) on ``tf.nn`` ops, with tensorpack's names.

Variables: ``W`` (the kernel) and ``b`` (the bias), under the layer's name: ``conv0/W``.
"""
from tfloop.compat import tf, tfv1
from tfloop.models.layer_args import (
    channels_of,
    convert_args,
    data_format_of,
    default_kernel_initializer,
    finish_output,
    gpu_visible,
    new_variable,
    padding_of,
    run_in_layout,
    shape2d,
    shape4d,
)
from tfloop.models.registry import VariableHolder, layer_register
from tfloop.utils.checks import is_int

__all__ = ["Conv2D", "Conv2DTranspose", "Deconv2D"]

_CONV_ALIASES = {"out_channel": "filters", "kernel_shape": "kernel_size", "stride": "strides"}


def _finish_conv(y, W, filters, dtype, data_format, use_bias, bias_initializer,
                 bias_regularizer, activation, activity_regularizer):
    """Add the bias ``b`` (with ``use_bias``) and the activation; the output's ``variables``
    hold ``W`` (and ``b``)."""
    variables = VariableHolder(W=W)
    if use_bias:
        variables.b = new_variable("b", [filters], bias_initializer or tfv1.zeros_initializer(),
                                   bias_regularizer, dtype=dtype)
        y = tf.nn.bias_add(y, variables.b, data_format=data_format)
    y = finish_output(y, activation, activity_regularizer)
    y.variables = variables
    return y


@layer_register(log_shape=True)
@convert_args(_CONV_ALIASES)
def Conv2D(inputs, filters, kernel_size, strides=(1, 1), padding="same",
           data_format="channels_last", dilation_rate=(1, 1), activation=None, use_bias=True,
           kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
           bias_regularizer=None, activity_regularizer=None, split=1):
    """A 2D convolution: ``activation(conv(x, W) + b)``, the output named ``<name>/output``.

    As tensorpack's: the default kernel initializer is variance scaling with scale 2, the default
    padding ``'same'``, and ``split`` > 1 makes a group convolution. Old names ``out_channel``,
    ``kernel_shape``, ``stride``, ``nl``, ``W_init``, ``b_init`` are accepted.

    Args:
        inputs (tf.Tensor): 4D, NHWC (``data_format='channels_last'``) or NCHW.
        filters (int): output channels.
        kernel_size, strides, dilation_rate: an int or a pair.
        padding (str): ``'same'`` or ``'valid'``, any case.
        split (int): groups; both channel counts must be divisible by it.

    Variables: ``W`` of shape ``kernel_size + [in_channels / split, filters]``; ``b``.

    Example:
        >>> x = Conv2D("conv0", image, 32, 5, activation=tf.nn.relu)
        >>> x.variables.W.shape       # [5, 5, 1, 32]
    """
    layer = "Conv2D"
    data_format = data_format_of(data_format, layer)
    in_channels = channels_of(inputs, data_format, layer)
    kernel = shape2d(kernel_size, "kernel_size", layer)
    stride = shape2d(strides, "strides", layer)
    dilation = shape2d(dilation_rate, "dilation_rate", layer)
    padding = padding_of(padding, layer)
    if not is_int(split) or split < 1 or in_channels % split or filters % split:
        raise ValueError(f"Conv2D: split={split!r} must be a positive int dividing both the "
                         f"input channels ({in_channels}) and filters ({filters}).")
    if stride != [1, 1] and dilation != [1, 1]:
        raise ValueError(f"Conv2D: strides {stride} and dilation_rate {dilation} cannot both be "
                         f"above 1 (TensorFlow has no such convolution).")
    W = new_variable("W", kernel + [in_channels // split, filters],
                     kernel_initializer or default_kernel_initializer(), kernel_regularizer,
                     dtype=inputs.dtype)

    def conv(x, fmt):
        axis = 3 if fmt == "NHWC" else 1
        kwargs = dict(strides=shape4d(stride, fmt), padding=padding, data_format=fmt,
                      dilations=shape4d(dilation, fmt))
        if split == 1 or gpu_visible():
            return tf.nn.conv2d(x, W, **kwargs)
        # CPU kernels have no gradient for group convolution: one convolution per group.
        groups = zip(tf.split(x, split, axis), tf.split(W, split, 3))
        return tf.concat([tf.nn.conv2d(xi, wi, **kwargs) for xi, wi in groups], axis)

    y = run_in_layout(inputs, data_format, conv)
    return _finish_conv(y, W, filters, inputs.dtype, data_format, use_bias, bias_initializer,
                        bias_regularizer, activation, activity_regularizer)


def _transposed_size(size, stride, kernel, padding):
    extra = 0 if padding == "SAME" else max(kernel - stride, 0)
    return size * stride + extra


@layer_register(log_shape=True)
@convert_args(_CONV_ALIASES)
def Conv2DTranspose(inputs, filters, kernel_size, strides=(1, 1), padding="same",
                    data_format="channels_last", activation=None, use_bias=True,
                    kernel_initializer=None, bias_initializer=None, kernel_regularizer=None,
                    bias_regularizer=None, activity_regularizer=None):
    """A transposed convolution ("deconvolution"); ``Deconv2D`` is the same layer.

    The output is ``strides`` times larger than the input (plus ``max(kernel - stride, 0)`` with
    ``padding='valid'``); unknown input sizes stay unknown in the static shape.

    Variables: ``W`` of shape ``kernel_size + [filters, in_channels]``; ``b``.

    Example:
        >>> y = Conv2DTranspose("deconv0", x, 16, 3, strides=2)    # [N, 2H, 2W, 16]
    """
    layer = "Conv2DTranspose"
    data_format = data_format_of(data_format, layer)
    in_channels = channels_of(inputs, data_format, layer)
    kernel = shape2d(kernel_size, "kernel_size", layer)
    stride = shape2d(strides, "strides", layer)
    padding = padding_of(padding, layer)
    W = new_variable("W", kernel + [filters, in_channels],
                     kernel_initializer or default_kernel_initializer(), kernel_regularizer,
                     dtype=inputs.dtype)

    def deconv(x, fmt):
        h_axis = 1 if fmt == "NHWC" else 2
        dynamic, static = tf.shape(x), x.shape.as_list()
        sizes = [_transposed_size(dynamic[h_axis + i], stride[i], kernel[i], padding)
                 for i in range(2)]
        static_sizes = [None if static[h_axis + i] is None else
                        _transposed_size(static[h_axis + i], stride[i], kernel[i], padding)
                        for i in range(2)]
        if fmt == "NHWC":
            out_shape, out_static = [dynamic[0]] + sizes + [filters], \
                [static[0]] + static_sizes + [filters]
        else:
            out_shape, out_static = [dynamic[0], filters] + sizes, \
                [static[0], filters] + static_sizes
        y = tf.nn.conv2d_transpose(x, W, tf.stack(out_shape), shape4d(stride, fmt),
                                   padding=padding, data_format=fmt)
        y.set_shape(out_static)
        return y

    y = run_in_layout(inputs, data_format, deconv)
    return _finish_conv(y, W, filters, inputs.dtype, data_format, use_bias, bias_initializer,
                        bias_regularizer, activation, activity_regularizer)


Deconv2D = Conv2DTranspose
