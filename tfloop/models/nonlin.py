"""Nonlinearities with tensorpack's names: BNReLU, PReLU, Maxout."""
from tfloop.compat import tf, tfv1
from tfloop.models.batch_norm import BatchNorm
from tfloop.models.layer_args import convert_args
from tfloop.models.registry import VariableHolder, layer_register
from tfloop.utils import logger

__all__ = ["BNReLU", "Maxout", "PReLU"]


@layer_register(use_scope=None)
@convert_args()
def BNReLU(x, name=None):
    """``relu(BatchNorm('bn', x))``; usable as an activation (``activation=BNReLU``).

    Example:
        >>> x = Conv2D("conv0", x, 32, 3, activation=BNReLU)    # variables conv0/bn/...
    """
    if name is not None:
        logger.warning("BNReLU(name=...) is deprecated: the output is named 'output'.")
    return tf.nn.relu(BatchNorm("bn", x), name=name)


@layer_register()
@convert_args()
def PReLU(x, init=0.001, name=None):
    """Parametric ReLU (He et al. 2015): ``max(x, 0) + alpha * min(x, 0)`` with a learned scalar
    ``alpha`` (the variable ``<name>/alpha``, starting at ``init``).

    Example:
        >>> y = PReLU("prelu", x)
    """
    if name is not None:
        logger.warning("PReLU(name=...) is deprecated: the output is named 'output'.")
    alpha = tfv1.get_variable("alpha", [], x.dtype, tfv1.constant_initializer(init))
    out = tf.multiply((1 + alpha) * x + (1 - alpha) * tf.abs(x), 0.5, name=name or "output")
    out.variables = VariableHolder(alpha=alpha)
    return out


@layer_register(use_scope=None)
@convert_args()
def Maxout(x, num_unit):
    """Maxout (Goodfellow et al. 2013): the maximum over groups of ``num_unit`` channels.

    Args:
        x (tf.Tensor): NHWC or NC, with a known number of channels divisible by ``num_unit``.

    Returns:
        tf.Tensor: NHW(C/num_unit) or N(C/num_unit), named ``output``.

    Example:
        >>> y = Maxout(x, 4)
    """
    shape = x.shape.as_list() if x.shape.rank is not None else None
    if shape is None or len(shape) not in (2, 4):
        raise ValueError(f"Maxout needs a 2D or 4D input, got shape {x.shape}.")
    channels = shape[-1]
    if channels is None or channels % num_unit:
        raise ValueError(f"Maxout: the number of channels ({channels}) must be known and "
                         f"divisible by num_unit={num_unit}.")
    groups = channels // num_unit
    if len(shape) == 4:
        dynamic = tf.shape(x)
        x = tf.reshape(x, tf.stack([-1, dynamic[1], dynamic[2], groups, num_unit]))
        x.set_shape([None, shape[1], shape[2], groups, num_unit])
    else:
        x = tf.reshape(x, [-1, groups, num_unit])
    return tf.reduce_max(x, len(shape), name="output")
