"""Decorators and contexts for variable and name scopes (tensorpack's ``tfutils.scope_utils``)."""
import contextlib
import functools
import weakref

from tfloop.compat import tfv1
from tfloop.utils import logger

__all__ = ["auto_reuse_variable_scope", "under_name_scope", "under_variable_scope",
           "cached_name_scope"]


def auto_reuse_variable_scope(func):
    """Decorate a function so that its second and later calls in the same variable scope (of
    the same graph) reuse the variables the first call created.

    Example:
        >>> @auto_reuse_variable_scope
        ... def embed(x):
        ...     return x @ tf.compat.v1.get_variable("W", [3, 8])
        >>> a, b = embed(x1), embed(x2)          # one variable W, shared
    """
    used = weakref.WeakKeyDictionary()

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        scope = tfv1.get_variable_scope()
        seen = used.setdefault(tfv1.get_default_graph(), set())
        if scope.name in seen:
            with tfv1.variable_scope(scope, reuse=True, auxiliary_name_scope=False):
                return func(*args, **kwargs)
        seen.add(scope.name)
        return func(*args, **kwargs)
    return wrapper


def under_name_scope(name_scope=None):
    """A decorator that runs the function in a name scope: the ``name_scope=`` keyword of the
    call, else the decorator's ``name_scope``, else the function's name.

    A scope given at the call re-enters that scope if it exists; when the name is taken by
    something else and TensorFlow picks another one, a warning says so.

    Example:
        >>> @under_name_scope()
        ... def rms(x):
        ...     return tf.sqrt(tf.reduce_mean(tf.square(x)))
        >>> rms(t)                          # ops under "rms/"
        >>> rms(t, name_scope="grad_rms")   # ops under "grad_rms/"
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            given = "name_scope" in kwargs
            name = kwargs.pop("name_scope", name_scope) or func.__name__
            if not given:
                with tfv1.name_scope(name):
                    return func(*args, **kwargs)
            with cached_name_scope(name, top_level=False) as scope:
                actual = scope.rstrip("/").split("/")[-1]
                if actual != name:
                    logger.warning(f"{func.__name__} was called with name_scope={name!r} but runs "
                                   f"under {actual!r}: the name {name!r} is taken.")
                return func(*args, **kwargs)
        return wrapper
    return decorate


def under_variable_scope():
    """A decorator that runs the function in a variable scope named after the function.

    Example:
        >>> @under_variable_scope()
        ... def head(x):
        ...     return FullyConnected("fc", x, 10)    # variables head/fc/W, head/fc/b
    """
    def decorate(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with tfv1.variable_scope(func.__name__):
                return func(*args, **kwargs)
        return wrapper
    return decorate


_CACHED_SCOPES = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def cached_name_scope(name, top_level=True):
    """Open the name scope ``name`` the first time, and re-enter that same scope later (instead of
    ``name_1``, ``name_2``, ...).

    Args:
        name (str): the scope's name.
        top_level (bool): open it at the top level; False: under the current name scope.

    Yields:
        str: the full scope, ending in ``/``.

    Example:
        >>> with cached_name_scope("summaries"):
        ...     tf.compat.v1.summary.scalar("lr", lr)   # later calls reuse "summaries/"
    """
    graph = tfv1.get_default_graph()
    if not top_level:
        current = graph.get_name_scope()
        if current:
            name = f"{current}/{name}"
    cache = _CACHED_SCOPES.setdefault(graph, {})
    if name not in cache:
        with tfv1.name_scope(None), tfv1.name_scope(name) as scope:
            cache[name] = scope
    with tfv1.name_scope(cache[name]):
        yield cache[name]
