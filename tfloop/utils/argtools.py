"""Decorators and argument helpers (tensorpack's ``utils.argtools``): memoization, call-once
methods, argument mapping, and 2-D/4-D shape arguments."""
import functools
import inspect
import weakref

from tfloop.utils import logger
from tfloop.utils.checks import is_int

__all__ = ["map_arg", "memoized", "memoized_method", "graph_memoized", "memoized_ignoreargs",
           "call_only_once", "shape2d", "shape4d", "get_data_format", "log_once"]

memoized = functools.lru_cache(maxsize=None)
memoized.__doc__ = """Cache a function's results by its (hashable) arguments."""


def memoized_ignoreargs(func):
    """Call ``func`` once; every later call, whatever its arguments, returns the first result.

    Example:
        >>> @memoized_ignoreargs
        ... def load_vocabulary():
        ...     return read_file("vocab.txt")
    """
    results = []

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not results:
            results.append(func(*args, **kwargs))
        return results[0]
    return wrapper


def memoized_method(func):
    """Cache a method's results per instance and arguments (the cache lives on the instance).

    Example:
        >>> class Model:
        ...     @memoized_method
        ...     def get_optimizer(self):
        ...         return tf.compat.v1.train.AdamOptimizer(1e-3)
    """
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        cache = self.__dict__.setdefault("_MEMOIZED_CACHE", {})
        key = (func.__name__, args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = func(self, *args, **kwargs)
        return cache[key]
    return wrapper


def graph_memoized(func):
    """Cache a function's results per TensorFlow default graph and arguments.

    Example:
        >>> @graph_memoized
        ... def get_dropout_rate():
        ...     return tf.compat.v1.placeholder_with_default(0.5, [], "rate")
    """
    caches = weakref.WeakKeyDictionary()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from tfloop.compat import tfv1
        cache = caches.setdefault(tfv1.get_default_graph(), {})
        key = (args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = func(*args, **kwargs)
        return cache[key]
    return wrapper


def call_only_once(func):
    """Make a method (or property getter) raise when called a second time on the same instance.

    Example:
        >>> class Trainer:
        ...     @call_only_once
        ...     def setup_graph(self):
        ...         ...
    """
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        called = self.__dict__.setdefault("_CALL_ONLY_ONCE_CACHE", set())
        if func.__name__ in called:
            raise RuntimeError(f"{type(self).__name__}.{func.__name__} can only be called once "
                               f"per object.")
        called.add(func.__name__)
        return func(self, *args, **kwargs)
    return wrapper


def map_arg(**maps):
    """Transform named arguments before the call: ``@map_arg(gpus=int_to_list)``.

    Example:
        >>> @map_arg(gpus=lambda g: list(range(g)) if isinstance(g, int) else g)
        ... def train(gpus): ...
    """
    def decorate(func):
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name, fn in maps.items():
                if name in bound.arguments:
                    bound.arguments[name] = fn(bound.arguments[name])
            return func(*bound.args, **bound.kwargs)
        return wrapper
    return decorate


def shape2d(a):
    """``[h, w]`` from an int or a pair: ``shape2d(3) == [3, 3]``."""
    if is_int(a):
        return [a, a]
    if isinstance(a, (list, tuple)) and len(a) == 2:
        return list(a)
    raise ValueError(f"shape2d takes an int or a pair of ints, got {a!r}.")


def shape4d(a, data_format="NHWC"):
    """A 4-D shape for a 2-D one: ``[1, h, w, 1]`` (NHWC) or ``[1, 1, h, w]`` (NCHW)."""
    h, w = shape2d(a)
    if data_format in ("NHWC", "channels_last"):
        return [1, h, w, 1]
    if data_format in ("NCHW", "channels_first"):
        return [1, 1, h, w]
    raise ValueError(f"shape4d: data_format must be 'NHWC' or 'NCHW', got {data_format!r}.")


_KERAS_DATA_FORMATS = {"NHWC": "channels_last", "NCHW": "channels_first"}
_TF_DATA_FORMATS = {"channels_last": "NHWC", "channels_first": "NCHW"}


def get_data_format(data_format, keras_mode=True):
    """A 2-D data format in Keras' spelling (``keras_mode``) or TensorFlow's.

    Args:
        data_format (str): ``"NHWC"``, ``"channels_last"``, ``"NCHW"`` or ``"channels_first"``.
        keras_mode (bool): return ``"channels_last"``/``"channels_first"`` (True) or
            ``"NHWC"``/``"NCHW"`` (False).

    Raises:
        ValueError: ``data_format`` is none of the four.

    Example:
        >>> get_data_format("NCHW")
        'channels_first'
        >>> get_data_format("channels_last", keras_mode=False)
        'NHWC'
    """
    spelling = _KERAS_DATA_FORMATS if keras_mode else _TF_DATA_FORMATS
    result = spelling.get(data_format, data_format) if isinstance(data_format, str) else None
    if result not in spelling.values():
        raise ValueError(f"Unknown data_format {data_format!r}: use 'NHWC' (or "
                         "'channels_last') or 'NCHW' (or 'channels_first').")
    return result


_LOG_LEVELS = ("debug", "info", "warn", "warning", "error", "critical", "exception")


@functools.cache
def _log_once(message, func):
    getattr(logger, func)(message)


def log_once(message, func="info"):
    """Log ``message`` the first time this process asks for it; later identical calls log nothing.

    Args:
        message (str): what to log.
        func (str): the logger method: ``"info"``, ``"warn"``, ``"warning"``, ``"error"``, ...

    Raises:
        ValueError: ``func`` is not a logger method.

    Example:
        >>> for image in images:
        ...     log_once("Some images are filtered out for training", "warn")
    """
    if func not in _LOG_LEVELS:
        raise ValueError(f"log_once: func must be one of {_LOG_LEVELS}, got {func!r}.")
    _log_once(message, func)
