"""tensorpack's ``models.utils``: ``VariableHolder`` (:mod:`tfloop.models.registry`) and
``disable_autograph``, which layers copied from tensorpack's source import."""
from tfloop.models.registry import VariableHolder

__all__ = ["VariableHolder"]


def disable_autograph():
    """A decorator that keeps AutoGraph from converting a function (TensorFlow's
    ``tf.autograph.experimental.do_not_convert``), as tensorpack's ``BatchNorm`` uses it.

    Example:
        >>> @disable_autograph()
        ... def layer(x):
        ...     return x if x.shape.rank == 4 else tf.expand_dims(x, 1)
    """
    from tfloop.compat import tf
    return tf.autograph.experimental.do_not_convert
