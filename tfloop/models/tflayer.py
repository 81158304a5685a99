"""rename_tflayer_get_variable: give variables made by tf.layers-style code tensorpack's names."""
import contextlib

from tfloop.compat import tfv1

__all__ = ["rename_get_variable", "rename_tflayer_get_variable"]

TFLAYER_NAMES = {"kernel": "W", "bias": "b", "moving_mean": "mean/EMA",
                 "moving_variance": "variance/EMA"}


@contextlib.contextmanager
def rename_get_variable(mapping):
    """Within the block, ``tfv1.get_variable`` renames a variable whose last name component is
    a key of ``mapping`` (e.g. ``{'kernel': 'W'}``).

    Example:
        >>> with rename_get_variable({"kernel": "W"}):
        ...     w = tf.compat.v1.get_variable("kernel", [3, 3])   # named W
    """
    def renaming_getter(getter, name, *args, **kwargs):
        head, _, base = name.rpartition("/")
        if base in mapping:
            name = f"{head}/{mapping[base]}" if head else mapping[base]
        return getter(name, *args, **kwargs)

    scope = tfv1.get_variable_scope()
    with tfv1.variable_scope(scope, custom_getter=renaming_getter, auxiliary_name_scope=False):
        yield


def rename_tflayer_get_variable():
    """A context in which variables named as ``tf.layers`` names them get tensorpack's names:
    ``kernel`` -> ``W``, ``bias`` -> ``b``, ``moving_mean`` -> ``mean/EMA``,
    ``moving_variance`` -> ``variance/EMA``.

    Example:
        >>> with rename_tflayer_get_variable():
        ...     w = tf.compat.v1.get_variable("conv0/kernel", [3, 3, 1, 8])   # conv0/W
    """
    return rename_get_variable(TFLAYER_NAMES)
