"""argscope: default arguments for layers inside a ``with`` block (tensorpack's names).

An argscope is a dict ``{layer name: {argument: value}}``; each ``with argscope(...)`` pushes a
copy of the current one with the new defaults added, and pops it on exit. Arguments given in a
call override the argscope's.
"""
import copy
import inspect
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any

from tfloop.compat import tf
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.utils import logger

__all__ = [
    "argscope",
    "enable_argscope_for_function",
    "enable_argscope_for_module",
    "get_arg_scope",
]

_ARG_SCOPES = []


def shape_str(tensors) -> str:
    """``[?, 28, 28, 1]`` for a tensor (``?`` for unknown dimensions); joined by ``, `` for a list."""
    if isinstance(tensors, (list, tuple)):
        return ", ".join(shape_str(t) for t in tensors)
    return str(tensors.shape.as_list() if tensors.shape.rank is not None else "<unknown rank>") \
        .replace("None", "?")


@contextmanager
def argscope(layers, **kwargs: Any) -> Iterator[None]:
    """Within the block, every call of ``layers`` gets ``kwargs`` as default arguments.

    Args:
        layers: a layer (or a list of them) registered with ``layer_register`` or wrapped by
            :func:`enable_argscope_for_function`.
        **kwargs: the default arguments.

    Raises:
        TypeError: a layer does not support argscope.

    Example:
        >>> with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu, filters=32):
        ...     x = Conv2D("conv0", x)
        ...     x = Conv2D("conv1", x, filters=64)   # overrides the argscope
    """
    if not isinstance(layers, list):
        layers = [layers]
    for layer in layers:
        if not getattr(layer, "__argscope_enabled__", False):
            raise TypeError(f"argscope does not support {layer!r}: use a layer registered with "
                            f"layer_register, or wrap the function with "
                            f"enable_argscope_for_function first.")
    scope = copy.copy(get_arg_scope())
    for layer in layers:
        scope[layer.__name__] = dict(scope[layer.__name__], **kwargs)
    _ARG_SCOPES.append(scope)
    try:
        yield
    finally:
        _ARG_SCOPES.pop()


def get_arg_scope() -> dict:
    """The current argscope: ``{layer name: {argument: value}}`` (empty outside any argscope).

    Example:
        >>> with argscope(Conv2D, kernel_size=3):
        ...     get_arg_scope()["Conv2D"]       # {'kernel_size': 3}
    """
    return _ARG_SCOPES[-1] if _ARG_SCOPES else defaultdict(dict)


def enable_argscope_for_function(func: Callable, log_shape: bool = True) -> Callable:
    """Wrap ``func`` so that :func:`argscope` can set its arguments.

    Args:
        func: maps a tensor (its first argument) to a tensor or a tuple of tensors.
        log_shape: log the first input's and first output's shapes, in the first training tower
            (or outside any tower) only.

    Example:
        >>> dense = enable_argscope_for_function(my_dense)
        >>> with argscope(dense, units=10):
        ...     y = dense(x)
    """
    if not callable(func):
        raise TypeError(f"enable_argscope_for_function needs a callable, got {func!r}.")

    @wraps(func)
    def wrapped(*args, **kwargs):
        actual = dict(get_arg_scope()[func.__name__], **kwargs)
        out = func(*args, **actual)
        ctx = get_current_tower_context()
        first_tower = ctx is None or "tower" not in ctx.ns_name.lower() or \
            ctx.is_main_training_tower
        if log_shape and first_tower and args and isinstance(args[0], tf.Tensor):
            shown = out[0] if isinstance(out, tuple) else out
            if isinstance(shown, tf.Tensor):
                name = kwargs.get("name", func.__name__)
                logger.info(f"{name!r:<12}: {shape_str(args[0])} --> {shape_str(shown)}")
        return out

    wrapped.__argscope_enabled__ = True
    return wrapped


def enable_argscope_for_module(module, log_shape: bool = True) -> None:
    """Replace every function of ``module`` by its :func:`enable_argscope_for_function` wrapper
    (this changes the module for the whole process).

    Example:
        >>> enable_argscope_for_module(mylayers)
        >>> with argscope(mylayers.dense, units=10):
        ...     y = mylayers.dense(x)
    """
    for name, obj in inspect.getmembers(module, inspect.isfunction):
        setattr(module, name, enable_argscope_for_function(obj, log_shape=log_shape))
