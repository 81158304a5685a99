"""Argument checks for constructors and public functions.

Each check returns the value it accepted, so a constructor reads
``self.period = check_positive_int(period, "period")``, and refuses a bad value early with a
message naming the argument, the value it got and the form it takes:

    >>> check_int(0, "StagingInput's nr_stage", at_least=1)
    Traceback (most recent call last):
    ValueError: StagingInput's nr_stage must be an int >= 1, got 0.

``name`` is the argument as the user knows it, prefixed by its owner where the owner is not
obvious from the traceback (``"TFEventWriter: max_queue"``, ``"BatchQueueInput's batch_size"``).

A ``bool`` is never a number here: ``True`` for an int argument is almost always a mistake (a flag
in the wrong position), so every int or number check refuses it. An int argument takes any
integral number (``int``, numpy integers) and hands back a plain ``int``; a float such as ``2.0`` is
refused rather than truncated.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["repeated", "check_list_of", "check_names", "is_int", "is_number", "check_int",
           "check_positive_int", "check_number", "check_positive_number", "check_bool",
           "check_one_of", "check_name", "check_callable"]


def is_int(value: Any) -> bool:
    """True for an integral number (``int``, a numpy integer) that is not a ``bool``."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """True for a real number (int, float, numpy scalar) that is not a ``bool``."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _bound(at_least: float | None, above: float | None) -> tuple[str, Callable[[Any], bool]]:
    if (at_least is None) == (above is None):
        raise TypeError("give exactly one of at_least= and above=.")
    if at_least is not None:
        return f">= {at_least}", lambda v: v >= at_least
    return f"> {above}", lambda v: v > above


def _refuse(name: str, form: str, value: Any, allow_none: bool, note: str | None) -> ValueError:
    form += " or None" if allow_none else ""
    form += f" ({note})" if note else ""
    return ValueError(f"{name} must be {form}, got {value!r}.")


def check_int(value: Any, name: str, *, at_least: int | None = None, above: int | None = None,
              allow_none: bool = False, note: str | None = None) -> int | None:
    """An int bounded below, e.g. a queue size (``at_least=1``) or a count (``at_least=0``).

    Args:
        value: the argument as given.
        name (str): the argument's name in the message.
        at_least (int): the smallest valid value; or
        above (int): the largest invalid value (give exactly one of the two).
        allow_none (bool): accept None (returned as is), e.g. for "no limit".
        note (str): what a boundary value means, shown in brackets: ``"0: once per epoch"``.

    Returns:
        ``int(value)``, or None when None is allowed and given.

    Raises:
        ValueError: ``value`` is not an int (a bool, a float, a str ...) or is out of range:
            ``"<name> must be an int >= 1[ or None][ (<note>)], got <value>."``

    Example:
        >>> check_int(3, "nr_stage", at_least=1)
        3
        >>> check_int(None, "max_to_keep", at_least=0, allow_none=True) is None
        True
    """
    bound, within = _bound(at_least, above)
    if value is None and allow_none:
        return None
    if not is_int(value) or not within(value):
        raise _refuse(name, f"an int {bound}", value, allow_none, note)
    return int(value)


def check_positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """An int >= 1, worded ``"<name> must be a positive int[ or None], got <value>."``.

    Raises:
        ValueError: ``value`` is not an int >= 1 (nor None when ``allow_none``).

    Example:
        >>> check_positive_int(8, "TFEventWriter: max_queue")
        8
    """
    if value is None and allow_none:
        return None
    if not is_int(value) or value < 1:
        raise _refuse(name, "a positive int", value, allow_none, None)
    return int(value)


def check_number(value: Any, name: str, *, at_least: float | None = None,
                 above: float | None = None, allow_none: bool = False,
                 note: str | None = None) -> float | int | None:
    """A real number, optionally bounded below: ``"<name> must be a number >= 0, got -1."``.

    With neither ``at_least`` nor ``above`` any real number passes (``"must be a number"``).

    Raises:
        ValueError: ``value`` is not a real number (a bool, a str, None unless allowed ...) or is
            out of range.

    Example:
        >>> check_number(0.5, "GlobalNormClip: global_norm", above=0)
        0.5
    """
    if value is None and allow_none:
        return None
    if at_least is None and above is None:
        form, within = "a number", (lambda v: True)
    else:
        bound, within = _bound(at_least, above)
        form = f"a number {bound}"
    if not is_number(value) or not within(value):
        raise _refuse(name, form, value, allow_none, note)
    return value


def check_positive_number(value: Any, name: str, *, allow_none: bool = False,
                          unit: str | None = None) -> float | int | None:
    """A real number > 0, worded ``"<name> must be a positive number[ of <unit>][ or None]"``.

    Args:
        unit (str): what the number counts, e.g. ``"seconds"``.

    Raises:
        ValueError: ``value`` is not a number > 0 (nor None when ``allow_none``).

    Example:
        >>> check_positive_number(1.5, "interval", unit="seconds")
        1.5
    """
    if value is None and allow_none:
        return None
    if not is_number(value) or not value > 0:
        form = "a positive number" + (f" of {unit}" if unit else "")
        raise _refuse(name, form, value, allow_none, None)
    return value


def check_bool(value: Any, name: str, *, note: str | None = None) -> bool:
    """A flag given as ``True`` or ``False`` (not 0/1, not a string such as ``"no"``).

    Args:
        note (str): what True means, or what a wrong value was likely meant for, shown in
            brackets: ``"True: larger is better"``.

    Raises:
        TypeError: ``"<name> must be True or False[ (<note>)], got <value>."``

    Example:
        >>> check_bool(False, "ScaleGradient: verbose")
        False
    """
    if not isinstance(value, bool):
        meaning = f" ({note})" if note else ""
        raise TypeError(f"{name} must be True or False{meaning}, got {value!r}.")
    return value


def check_one_of(value: Any, name: str, choices: Iterable[Any]) -> Any:
    """One of a fixed set of values: ``"<name> must be one of a, b; got 'c'."``.

    Raises:
        ValueError: ``value`` is not one of ``choices``.

    Example:
        >>> check_one_of("pdb", "InjectShell shell", ("ipython", "pdb"))
        'pdb'
    """
    choices = tuple(choices)
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(str, choices))}; got {value!r}.")
    return value


def check_name(value: Any, name: str) -> str:
    """A non-empty string, e.g. a tensor, summary or signature name.

    Raises:
        TypeError: ``value`` is not a str, or is the empty string:
            ``"<name> must be a non-empty string, got <value>."``.

    Example:
        >>> check_name("accuracy", "ClassificationError summary_name")
        'accuracy'
    """
    if not isinstance(value, str) or not value:
        raise TypeError(f"{name} must be a non-empty string, got {value!r}.")
    return value


def repeated(items: Iterable[Any]) -> list[Any]:
    """The items that occur more than once, sorted, each once.

    Example:
        >>> repeated(["x", "y", "x"])
        ['x']
    """
    items = list(items)
    return sorted({item for item in items if items.count(item) > 1})


def check_list_of(value: Any, name: str, cls: type, *, one: type | None = None) -> list | None:
    """None, one object, or an iterable of ``cls`` objects, as a list (None stays None).

    Args:
        one: the type of a single object taken as a one-item list (``cls`` by default); e.g.
            every Callback for a list of monitors, so that a callback given as a monitor gets the
            message below rather than "not iterable".

    Raises:
        TypeError: an item (or ``value``) is not a ``cls``:
            ``"<name> must be a list of <cls>; got <item> (<type>)."``.

    Example:
        >>> check_list_of(None, "callbacks", int) is None
        True
    """
    if value is None:
        return None
    try:
        items = [value] if isinstance(value, one or cls) else list(value)
    except TypeError:
        items = [value]
    for item in items:
        if not isinstance(item, cls):
            raise TypeError(f"{name} must be a list of {cls.__name__}; got {item!r} "
                            f"({type(item).__name__}).")
    return items


def check_names(value: Any, owner: str, what: str = "tensor") -> list[str]:
    """A name or a non-empty list of non-empty names, as a list.

    Raises:
        ValueError: ``"<owner> needs a list of <what> names, got <value>."``.

    Example:
        >>> check_names("cost", "TensorPrinter")
        ['cost']
    """
    names = [value] if isinstance(value, str) else value
    try:
        names = list(names)
    except TypeError:
        names = None
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{owner} needs a list of {what} names, got {value!r}.")
    return names


def check_callable(value: Any, name: str, *, signature: str | None = None,
                   allow_none: bool = False) -> Callable[..., Any] | None:
    """A function (or any callable): ``"<name> must be callable[ as <signature>], got <value>."``.

    Args:
        signature (str): how it is called, e.g. ``"func(grad, var) -> grad"``.
        allow_none (bool): accept None (returned as is).

    Raises:
        TypeError: ``value`` is not callable (nor None when ``allow_none``).

    Example:
        >>> check_callable(len, "map_func") is len
        True
    """
    if value is None and allow_none:
        return None
    if not callable(value):
        how = f" as {signature}" if signature else ""
        raise TypeError(f"{name} must be callable{how}, got {value!r}.")
    return value
