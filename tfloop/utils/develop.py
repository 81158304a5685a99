"""tensorpack's module for names that exist but cannot be used here (``create_dummy_class``), and
``log_deprecated`` with the helpers code copied from tensorpack imports (``deprecated``,
``HIDE_DOC``, ``building_rtfd``).

:func:`unavailable` makes such a name for tfloop: importable, so a tensorpack script's imports
keep working, and raising :class:`UnavailableError` with the reason and the replacement when it is
called (a class: instantiated). ``docs/migrating.md`` lists every one.
"""
import collections
import functools
import os

from tfloop.utils import logger

__all__ = []  # tensorpack's __all__ here is empty too: import the names from this module

_DEPRECATION_COUNTS: collections.Counter = collections.Counter()


class UnavailableError(ImportError):
    """A tensorpack name that tfloop keeps importable but cannot provide was used.

    An ``ImportError``, as tensorpack's dummies for missing dependencies raise, so a script's
    ``except ImportError:`` fallback still catches it.
    """


def unavailable(name, reason):
    """A stand-in for tensorpack's ``name`` that raises :class:`UnavailableError` naming
    ``reason`` (what is missing and what to use instead) when called or instantiated.

    Args:
        name (str): the tensorpack name, e.g. ``"BytePSTrainer"``.
        reason (str): why it cannot work and the replacement, as one or more sentences.

    Example:
        >>> load_caffe = unavailable("load_caffe", "It needs Caffe; convert the model to npz.")
        >>> load_caffe("deploy.prototxt", "weights.caffemodel")
        Traceback (most recent call last):
        tfloop.utils.develop.UnavailableError: load_caffe is not available in tfloop: It needs ...
    """
    message = f"{name} is not available in tfloop: {reason}"

    def __init__(self, *args, **kwargs):
        raise UnavailableError(message)

    return type(name, (), {"__init__": __init__, "__doc__": message,
                           "__tfloop_unavailable__": reason, "__module__": __name__})


def is_unavailable(obj):
    """Whether ``obj`` was made by :func:`unavailable`."""
    return isinstance(obj, type) and "__tfloop_unavailable__" in vars(obj)


def create_dummy_class(klass, dependency):
    """tensorpack's stand-in for a class whose dependency is missing: raises when instantiated.

    Example:
        >>> LMDBData = create_dummy_class("LMDBData", "lmdb")
    """
    return unavailable(klass, f"it needs {dependency!r}, which cannot be imported.")


def create_dummy_func(func, dependency):
    """tensorpack's stand-in for a function whose dependencies are missing: raises when called.

    Example:
        >>> load_caffe = create_dummy_func("load_caffe", ["caffe"])
    """
    if isinstance(dependency, (list, tuple)):
        dependency = ",".join(dependency)
    return unavailable(func, f"it needs {dependency!r}, which cannot be imported.")


def log_deprecated(name="", text="", eos="", max_num_warnings=None):
    """Log ``[Deprecated] <name> was deprecated. <text>`` (``eos``: the date support ends), at
    most ``max_num_warnings`` times for one message.

    Example:
        >>> log_deprecated("BatchData(use_list=)", "Use BatchData(...) without it.")
    """
    if not (name or text):
        raise ValueError("log_deprecated needs a name or a text.")
    if name:
        message = f"{name} will be deprecated after {eos}. {text}" if eos else \
            f"{name} was deprecated. {text}"
    else:
        message = text + (f" Legacy period ends after {eos}." if eos else "")
    if max_num_warnings is not None:
        if _DEPRECATION_COUNTS[message] >= max_num_warnings:
            return
        _DEPRECATION_COUNTS[message] += 1
    logger.warning("[Deprecated] " + message.strip())


def deprecated(text="", eos="", max_num_warnings=None):
    """A decorator that logs, at each call, that the function is deprecated (with
    :func:`log_deprecated`: ``text`` says what to use instead, ``eos`` when support ends).

    Example:
        >>> @deprecated("Use new_loader() instead.", "2020-01-01")
        ... def old_loader():
        ...     return new_loader()
    """
    def decorate(func):
        @functools.wraps(func)
        def logged(*args, **kwargs):
            log_deprecated(func.__name__, text, eos, max_num_warnings=max_num_warnings)
            return func(*args, **kwargs)
        return logged
    return decorate


def HIDE_DOC(func):  # noqa: N802  (tensorpack's name)
    """Mark ``func`` as left out of generated API docs (tensorpack's documentation builder read
    the mark); the function itself is unchanged.

    Example:
        >>> @HIDE_DOC
        ... def _internal_hook(self):
        ...     ...
    """
    func.__HIDE_SPHINX_DOC__ = True
    return func


def building_rtfd():
    """Whether the library is imported to build documentation (``READTHEDOCS`` or
    ``DOC_BUILDING`` set), as tensorpack checked it.

    Example:
        >>> building_rtfd()
        False
    """
    return os.environ.get("READTHEDOCS") == "True" or bool(os.environ.get("DOC_BUILDING"))
