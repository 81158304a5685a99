"""ConcatWith: ``tf.concat`` as a layer, so that it can be chained in a LinearWrap."""
from tfloop.compat import tf
from tfloop.models.layer_args import convert_args
from tfloop.models.registry import layer_register

__all__ = ["ConcatWith"]


@layer_register(use_scope=None)
@convert_args()
def ConcatWith(x, tensor, dim):
    """``tf.concat([x] + tensor, dim)``: ``x`` first, then a tensor or a list of tensors.

    Example:
        >>> y = LinearWrap(x).Conv2D("c", 8, 3).ConcatWith(skip, 3)()
    """
    if not isinstance(tensor, list):
        tensor = [tensor]
    return tf.concat([x] + tensor, dim)
