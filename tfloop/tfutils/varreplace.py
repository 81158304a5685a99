"""Changing what ``tf.compat.v1.get_variable`` returns inside a context: a custom getter, a
function of every variable (e.g. quantization), or frozen variables."""
import contextlib

from tfloop.compat import tf, tfv1
from tfloop.utils import logger

__all__ = ["custom_getter_scope", "remap_variables", "freeze_variables"]


@contextlib.contextmanager
def custom_getter_scope(custom_getter):
    """A context in which ``get_variable`` goes through ``custom_getter(getter, *args, **kwargs)``
    (in the current variable and name scopes).

    Example:
        >>> def fp16(getter, *args, **kwargs):
        ...     return tf.cast(getter(*args, **kwargs), tf.float16)
        >>> with custom_getter_scope(fp16):
        ...     x = FullyConnected("fc", x, 10)
    """
    with tfv1.variable_scope(tfv1.get_variable_scope(), custom_getter=custom_getter,
                             auxiliary_name_scope=False):
        yield


def remap_variables(fn):
    """A context in which every variable from ``get_variable`` is replaced by ``fn(variable)``.

    Example:
        >>> with remap_variables(lambda v: tf.round(v * 8) / 8):
        ...     x = FullyConnected("fc", x, 10)       # fc/W and fc/b are used quantized
    """
    def remap(getter, *args, **kwargs):
        return fn(getter(*args, **kwargs))
    return custom_getter_scope(remap)


def freeze_variables(stop_gradient=True, skip_collection=False):
    """A context in which the variables that ``get_variable`` returns are not trained.

    Args:
        stop_gradient (bool): return ``tf.stop_gradient(variable)`` (a tensor): no gradient flows
            through this use of it (other uses, e.g. by name or collection, still get one).
        skip_collection (bool): create trainable variables in ``MODEL_VARIABLES`` instead of
            ``TRAINABLE_VARIABLES``, so no trainer updates them (must hold when they are created).

    Example:
        >>> with freeze_variables(stop_gradient=False, skip_collection=True):
        ...     x = FullyConnected("backbone_fc", x, 1000)      # not trained, still saved
    """
    def freeze(getter, *args, **kwargs):
        trainable = kwargs.get("trainable", True)
        name = args[0] if args else kwargs.get("name")
        if skip_collection:
            kwargs["trainable"] = False
        variable = getter(*args, **kwargs)
        if trainable and skip_collection:
            if isinstance(variable, tf.Variable):
                tfv1.add_to_collection(tfv1.GraphKeys.MODEL_VARIABLES, variable)
            else:
                logger.warning(f"freeze_variables: the getter returned {variable!r} for {name!r}, "
                               f"not a variable (another custom getter?); it is left out of "
                               f"MODEL_VARIABLES.")
        if trainable and stop_gradient:
            variable = tf.stop_gradient(variable, name=f"freezed_{name}".replace("/", "_"))
        return variable
    return custom_getter_scope(freeze)
