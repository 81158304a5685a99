"""LayerNorm, InstanceNorm (tensorpack's): per-example statistics, variables ``beta``, ``gamma``."""
from tfloop.compat import tf, tfv1
from tfloop.models.layer_args import convert_args, data_format_of
from tfloop.models.registry import VariableHolder, layer_register
from tfloop.utils import logger

__all__ = ["InstanceNorm", "LayerNorm"]


def _normalize(x, axes, beta, gamma, epsilon):
    # Written out rather than tf.nn.moments + tf.nn.batch_normalization: oneDNN's layer-norm
    # fusion rewrites that pattern, and on TF 2.21 gets it wrong (or fails) for some shapes.
    centered = x - tf.reduce_mean(x, axes, keepdims=True)
    var = tf.reduce_mean(tf.square(centered), axes, keepdims=True)
    y = centered * tf.math.rsqrt(var + epsilon)
    if gamma is not None:
        y = y * gamma
    if beta is not None:
        y = y + beta
    return tf.identity(y, name="output")


def _affine(channels, new_shape, center, scale, gamma_initializer, dtype):
    """(beta, gamma) shaped to broadcast (``None`` when not learned), and their holder."""
    holder = VariableHolder()
    if center:
        holder.beta = tfv1.get_variable("beta", [channels], dtype, tfv1.zeros_initializer())
    if scale:
        holder.gamma = tfv1.get_variable("gamma", [channels], dtype,
                                         gamma_initializer or tfv1.ones_initializer())
    beta, gamma = (tf.reshape(v, new_shape) if v is not None else None
                   for v in (getattr(holder, "beta", None) if center else None,
                             getattr(holder, "gamma", None) if scale else None))
    return beta, gamma, holder


@layer_register()
@convert_args({"use_bias": "center", "use_scale": "scale", "gamma_init": "gamma_initializer"})
def LayerNorm(x, epsilon=1e-5, *, center=True, scale=True, gamma_initializer=None,
              data_format="channels_last"):
    """Layer normalization (Ba et al. 2016): each example normalized over all its dimensions.

    Args:
        x (tf.Tensor): 2D, or 4D in ``data_format``.
        center, scale (bool): learn ``beta`` / ``gamma`` (one per channel).

    Example:
        >>> y = LayerNorm("ln", x)
    """
    data_format = data_format_of(data_format, "LayerNorm")
    shape = x.shape.as_list() if x.shape.rank is not None else None
    if shape is None or len(shape) not in (2, 4):
        raise ValueError(f"LayerNorm needs a 2D or 4D input, got shape {x.shape}.")
    channels = shape[1] if data_format == "NCHW" or len(shape) == 2 else shape[-1]
    if channels is None:
        raise ValueError(f"LayerNorm needs a known number of channels, got shape {x.shape}.")
    # Channels last (2D or NHWC): 1D beta and gamma broadcast as they are.
    new_shape = [1, channels, 1, 1] if data_format == "NCHW" and len(shape) == 4 else [channels]
    beta, gamma, holder = _affine(channels, new_shape, center, scale, gamma_initializer, x.dtype)
    out = _normalize(x, list(range(1, len(shape))), beta, gamma, epsilon)
    out.variables = holder
    return out


@layer_register()
@convert_args({"gamma_init": "gamma_initializer"})
def InstanceNorm(x, epsilon=1e-5, *, center=True, scale=True, gamma_initializer=None,
                 data_format="channels_last", use_affine=None):
    """Instance normalization (Ulyanov et al. 2016): each example and channel normalized over
    its spatial dimensions.

    Args:
        x (tf.Tensor): 4D in ``data_format``.
        use_affine: deprecated; sets both ``center`` and ``scale``.

    Example:
        >>> y = InstanceNorm("inorm", x)
    """
    data_format = data_format_of(data_format, "InstanceNorm")
    if x.shape.rank != 4:
        raise ValueError(f"InstanceNorm needs a 4D input, got shape {x.shape}.")
    if use_affine is not None:
        logger.warning("InstanceNorm(use_affine=) is deprecated: use center= and scale=.")
        center = scale = use_affine
    shape = x.shape.as_list()
    if data_format == "NHWC":
        axes, channels = [1, 2], shape[3]
        new_shape = [channels]
    else:
        axes, channels = [2, 3], shape[1]
        new_shape = [1, channels, 1, 1]
    if channels is None:
        raise ValueError(f"InstanceNorm needs a known number of channels, got shape {x.shape}.")
    beta, gamma, holder = _affine(channels, new_shape, center, scale, gamma_initializer, x.dtype)
    out = _normalize(x, axes, beta, gamma, epsilon)
    out.variables = holder
    return out
