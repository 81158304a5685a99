"""tf.layers-style code in tensorpack's terms: ``rename_tflayer_get_variable`` gives its variables
tensorpack's names, and ``convert_to_tflayer_args`` gives a layer written on ``tf.layers``'
argument names tensorpack's calling conventions (layers copied from tensorpack import both)."""
import contextlib
import functools

from tfloop.compat import tfv1
from tfloop.utils.argtools import get_data_format

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


# tensorpack's old names of arguments every layer takes, and tf.layers' names for them.
_COMMON_OLD_NAMES = {"W_init": "kernel_initializer", "b_init": "bias_initializer"}


def map_common_tfargs(kwargs):
    """``kwargs`` of a tensorpack layer call in ``tf.layers``' terms: ``data_format`` in Keras'
    spelling (``'channels_last'``), ``nl`` as ``activation``, ``W_init``/``b_init`` as
    ``kernel_initializer``/``bias_initializer``. For layers copied from tensorpack's source.

    Example:
        >>> map_common_tfargs({"data_format": "NCHW", "W_init": init})
        {'data_format': 'channels_first', 'kernel_initializer': init}
    """
    kwargs = dict(kwargs)
    if kwargs.get("data_format") is not None:
        kwargs["data_format"] = get_data_format(kwargs["data_format"], keras_mode=True)
    if "nl" in kwargs:
        nl = kwargs.pop("nl")
        kwargs["activation"] = lambda x, name=None: nl(x, name=name)
    for old, new in _COMMON_OLD_NAMES.items():
        if old in kwargs:
            kwargs[new] = kwargs.pop(old)
    return kwargs


def convert_to_tflayer_args(args_names, name_mapping):
    """Decorator for a layer written on ``tf.layers``' argument names, as tensorpack's layers
    (and layers projects copied from them, e.g. a ``Conv3D``) are: the arguments after the input
    may be given by position in the order of ``args_names``, a keyword argument is renamed by
    ``name_mapping`` (tensorpack's old names: ``{'out_channel': 'filters'}``), and
    :func:`map_common_tfargs` applies. A positional argument wins over a keyword argument of the
    same name (set by an ``argscope``).

    Args:
        args_names (list[str]): the names of the arguments that may be positional.
        name_mapping (dict): old keyword name -> new name.

    Raises:
        TypeError: more positional arguments than ``args_names``, or an argument given under
            both its old and its new name.

    Example:
        >>> @layer_register(log_shape=True)
        ... @convert_to_tflayer_args(args_names=["filters", "kernel_size"],
        ...                          name_mapping={"out_channel": "filters"})
        ... def Conv3D(inputs, filters, kernel_size, data_format="channels_last"):
        ...     ...
    """
    def decorator(func):
        @functools.wraps(func)
        def converted(inputs, *args, **kwargs):
            if len(args) > len(args_names):
                raise TypeError(f"{func.__name__} takes at most {len(args_names)} positional "
                                f"argument(s) after the input ({', '.join(args_names)}), got "
                                f"{len(args)}: pass the others by keyword.")
            mapped, renamed = map_common_tfargs(kwargs), {}
            for name, value in mapped.items():
                new = name_mapping.get(name, name)
                if new != name and new in mapped:
                    raise TypeError(f"{func.__name__} got both {name}= and {new}= (one argument "
                                    "under its old and its new name): give only one.")
                renamed[new] = value
            renamed.update(zip(args_names, args))
            return func(inputs, **renamed)
        return converted
    return decorator
