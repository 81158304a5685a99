"""Arguments that tensorpack converted with ``int()`` or ``float()``, converted the same way.

tensorpack passed some arguments through ``int()`` or ``float()`` (a batch size, a schedule's
epochs, ``steps_per_epoch``), so scripts give them as strings read from a config file (``'25'``,
``'1e-5'``) or as floats from a division (``steps_per_epoch = 1000 / 64``). At those arguments
tfloop takes what tensorpack took:

- an int, a numpy integer, a string ``int()`` parses (``'25'``) and a float holding a whole
  number (``2.0``) become that int, silently: the value is the one meant;
- a float with a fraction (``2.5``) is truncated toward zero as ``int()`` did, with a warning,
  since the value used is not the one written;
- for a number, anything ``float()`` parses (``'1e-5'``, an int) becomes that number.

A ``bool`` and a string ``int()`` does not parse (``'2.5'``, ``'ten'``) are refused, as
everywhere in tfloop (see :mod:`tfloop.utils.checks`); so is a value out of range.

:func:`tensorpack_keywords` takes the keyword names tensorpack 0.9 used for arguments it later
renamed (``PrefetchDataZMQ(ds, nr_proc=4)``).

    >>> check_positive_int(tensorpack_int("25", "BatchData: batch_size"), "BatchData: batch_size")
    25
"""
from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any, TypeVar, cast

_F = TypeVar("_F", bound=Callable[..., Any])

from tfloop.utils import logger
from tfloop.utils.checks import is_int

__all__ = ["tensorpack_int", "tensorpack_float", "tensorpack_keywords"]


def tensorpack_int(value: Any, name: str) -> Any:
    """``int(value)`` where tensorpack's ``int()`` gave it; any other value as it is.

    Follow it with the argument's check (``check_int``, ``check_positive_int``), which refuses
    what is left: a bool, a string ``int()`` does not parse, None, a list ...

    Args:
        value: the argument as given.
        name (str): the argument as the user knows it, for the warning, e.g.
            ``"steps_per_epoch"``.

    Example:
        >>> tensorpack_int(2.0, "steps_per_epoch")
        2
        >>> tensorpack_int("2.5", "steps_per_epoch")    # int() refuses it: left for the check
        '2.5'
    """
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return value
    if isinstance(value, bool) or is_int(value) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        return value
    whole = int(value)
    if whole != value:
        logger.warning(f"{name} is {value!r}, not a whole number: it is taken as {whole}, as "
                       f"tensorpack's int() took it; pass {whole} (or the int you mean) to "
                       "silence this.")
    return whole


def tensorpack_float(value: Any) -> Any:
    """``float(value)`` for a string ``float()`` parses (``'1e-5'``); any other value as it is,
    for the argument's check to take (an int, a float) or refuse.

    Example:
        >>> tensorpack_float("1e-5")
        1e-05
    """
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def tensorpack_keywords(**older_names: str) -> Callable[[_F], _F]:
    """Decorator: take the keyword names tensorpack 0.9 gave arguments it later renamed, e.g.
    ``@tensorpack_keywords(nr_proc="num_proc")`` makes ``f(ds, nr_proc=4)`` call
    ``f(ds, num_proc=4)``.

    Raises:
        TypeError: an argument given under both names.

    Example:
        >>> @tensorpack_keywords(nr_reuse="num_reuse")
        ... def shuffle(ds, buffer_size, num_reuse=1):
        ...     ...
    """
    def decorate(func: _F) -> _F:
        @functools.wraps(func)
        def renamed(*args: Any, **kwargs: Any) -> Any:
            for old, new in older_names.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{func.__qualname__} got both {old}= (tensorpack 0.9's "
                                        f"name) and {new}=: give only {new}=.")
                    kwargs[new] = kwargs.pop(old)
            return func(*args, **kwargs)
        return cast(_F, renamed)
    return decorate
