"""What every layer does with its arguments: tensorpack's old names, data formats, 2D shapes.

tensorpack's layers accept both the ``tf.layers`` argument names (``filters``, ``kernel_size``)
and their own older ones (``out_channel``, ``kernel_shape``, ``nl``, ``W_init``); positional
arguments win over the same argument set by an ``argscope``. :func:`convert_args` does that for
each layer. The helpers below also run channels-first (``NCHW``) ops on a CPU, where TensorFlow
has no kernels for some of them, by transposing to ``NHWC`` and back.
"""
import functools
import inspect

from tfloop.compat import onednn_enabled, tf, tfv1
from tfloop.tfutils.export_graph import is_built_for_export
from tfloop.utils.checks import is_int

__all__ = []

# Old argument names that every layer accepts, besides its own aliases.
_COMMON_ALIASES = {"W_init": "kernel_initializer", "b_init": "bias_initializer"}
_DATA_FORMATS = {"NHWC": "NHWC", "channels_last": "NHWC", "NCHW": "NCHW",
                 "channels_first": "NCHW"}


def convert_args(aliases=None):
    """Decorator: map tensorpack's old argument names, ``nl`` and ``data_format`` for a layer.

    Positional arguments are bound to the function's parameter names and override keyword
    arguments of the same name (so that ``Conv2D('c', x, 64)`` wins over an argscope's
    ``out_channel=32``).
    """
    mapping = dict(_COMMON_ALIASES, **(aliases or {}))

    def decorator(func):
        params = list(inspect.signature(func).parameters.values())[1:]
        positional = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        accepted = {p.name for p in params}
        layer = func.__name__

        @functools.wraps(func)
        def converted(inputs, *args, **kwargs):
            if len(args) > len(positional):
                raise TypeError(
                    f"{layer} takes at most {len(positional)} positional argument(s) after the "
                    f"input ({', '.join(positional) or 'none'}), got {len(args)}: pass the others "
                    f"by keyword.")
            resolved = {}
            for name, value in kwargs.items():
                if name == "nl":
                    name, value = "activation", _activation_from_nl(value)
                new = mapping.get(name, name)
                if new != name and new in kwargs:
                    raise TypeError(f"{layer} got both {name}= and {new}= (the same argument "
                                    f"under its old and new name): give only one.")
                resolved[new] = value
            resolved.update(zip(positional, args))
            unknown = sorted(set(resolved) - accepted)
            if unknown:
                raise TypeError(f"{layer} got unexpected argument(s) {', '.join(unknown)}; it "
                                f"accepts {', '.join(sorted(accepted))}.")
            return func(inputs, **resolved)
        return converted
    return decorator


def _activation_from_nl(nl):
    if nl is None:
        return None
    return lambda x, name=None: nl(x, name=name)


def data_format_of(data_format, layer):
    """``'NHWC'`` or ``'NCHW'`` for any of tensorpack's spellings of a data format."""
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"{layer}: unknown data_format {data_format!r}: use 'channels_last' "
                         f"(or 'NHWC') or 'channels_first' (or 'NCHW').")
    return _DATA_FORMATS[data_format]


def shape2d(value, what, layer):
    """``[a, a]`` for an int ``a``; a list for a pair."""
    if is_int(value):
        return [value, value]
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(is_int(v) for v in value):
        return list(value)
    raise ValueError(f"{layer}: {what} must be an int or a pair of ints, got {value!r}.")


def shape4d(value, data_format):
    """A 2D ``value`` as 4D strides/ksize/dilations of ``data_format`` (``'NHWC'``/``'NCHW'``)."""
    return [1] + value + [1] if data_format == "NHWC" else [1, 1] + value


def padding_of(padding, layer):
    """``'SAME'`` or ``'VALID'``, whatever the case of ``padding``."""
    if not isinstance(padding, str) or padding.upper() not in ("SAME", "VALID"):
        raise ValueError(f"{layer}: padding must be 'same' or 'valid' (any case), got "
                         f"{padding!r}.")
    return padding.upper()


def channels_of(x, data_format, layer):
    """The static number of channels of a 4D ``x``; a clear error when unknown."""
    if x.shape.rank != 4:
        raise ValueError(f"{layer} needs a 4D input ({data_format}), got shape {x.shape}.")
    channels = x.shape[3 if data_format == "NHWC" else 1]
    if channels is None:
        raise ValueError(f"{layer} needs a known number of input channels, got shape "
                         f"{x.shape} ({data_format}).")
    return int(channels)


def default_kernel_initializer():
    """tensorpack's default for weights: variance scaling with scale 2 (He), untruncated."""
    return tfv1.variance_scaling_initializer(scale=2.0, distribution="untruncated_normal")


@functools.cache
def gpu_visible():
    """Whether TensorFlow sees a GPU (then channels-first ops run natively)."""
    return bool(tf.config.list_physical_devices("GPU"))


def run_in_layout(x, data_format, op):
    """``op(x, data_format)`` for an NHWC or NCHW ``x``, on any batch size.

    Without a GPU an NCHW ``x`` is transposed to NHWC for ``op`` and the result transposed back
    (CPU kernels lack NCHW for some ops), and the batch goes through :func:`guard_empty_batch`.
    """
    if gpu_visible():
        return op(x, data_format)
    if data_format == "NHWC":
        return guard_empty_batch(x, lambda t: op(t, "NHWC"))
    return guard_empty_batch(x, lambda t: tf.transpose(
        op(tf.transpose(t, [0, 2, 3, 1]), "NHWC"), [0, 3, 1, 2]))


def guard_empty_batch(x, compute):
    """``compute(x)``, also right when ``x``'s batch (first) dimension is 0 under oneDNN.

    oneDNN's CPU kernels (TensorFlow's default on x86 servers with AVX-512 VNNI/BF16 or AMX, or
    with ``TF_ENABLE_ONEDNN_OPTS=1``) mishandle an empty batch: a convolution returns its input's
    shape, a transposed convolution's gradient the output's, and max pooling's gradient aborts
    the process. There an empty batch runs ``compute`` on one sample of zeros and keeps none of
    its rows, so the result is empty, shaped as without oneDNN, with zero gradients. A batch
    known to be non-empty in the graph, or oneDNN off, adds nothing to the graph; nor does a
    graph built for an export (``tfutils/export_graph.py``), which runs in other runtimes, whose
    tools refuse the guard's ``tf.cond``.

    The guard puts the convolution in a ``tf.cond``, so oneDNN's rewrite no longer fuses its
    filter gradient with the bias gradient (``_MklNativeConv2DBackpropFilterWithBias``): the bias
    gradient of a layer with ``use_bias`` is then TensorFlow's ``BiasAddGrad``, a sum in another
    order, which differs in the last bits (measured on an AVX2 CPU: 9 ulp, 1e-6 relative, for a
    sum over 2048 positions; forward values and the kernel's gradient were bitwise the same).
    """
    batch = x.shape[0] if x.shape.rank else None
    if not onednn_enabled() or is_built_for_export() or (batch is not None and batch > 0):
        return compute(x)

    def on_one_zero_sample():
        one = tf.zeros(tf.concat([[1], tf.shape(x)[1:]], 0), x.dtype)
        return compute(one)[:0]

    if batch == 0:
        return on_one_zero_sample()
    return tf.cond(tf.shape(x)[0] > 0, lambda: compute(x), on_one_zero_sample)


def new_variable(name, shape, initializer, regularizer=None, **kwargs):
    """``tfv1.get_variable``; a ``regularizer``'s loss goes to ``REGULARIZATION_LOSSES`` when the
    variable is created (not when a later tower reuses it), as ``tf.layers`` did."""
    scope = tfv1.get_variable_scope().name
    full = f"{scope}/{name}" if scope else name
    existed = any(v.op.name == full for v in tfv1.global_variables())
    var = tfv1.get_variable(name, shape, initializer=initializer, **kwargs)
    if regularizer is not None and not existed:
        with tf.name_scope(f"{name}/Regularizer"):
            tfv1.add_to_collection(tfv1.GraphKeys.REGULARIZATION_LOSSES, regularizer(var))
    return var


def finish_output(y, activation, activity_regularizer=None):
    """``activation(y)`` named ``output``; an activity regularizer's loss (divided by the batch
    size, as ``tf.layers`` did) goes to ``REGULARIZATION_LOSSES``."""
    if activation is not None:
        y = activation(y)
    y = tf.identity(y, name="output")
    if activity_regularizer is not None:
        loss = activity_regularizer(y) / tf.cast(tf.shape(y)[0], y.dtype)
        tfv1.add_to_collection(tfv1.GraphKeys.REGULARIZATION_LOSSES, loss)
    return y
