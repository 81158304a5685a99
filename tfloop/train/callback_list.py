"""What a trainer's callback list must be: callbacks and monitor backends of the right types,
each object listed once, none serving another training."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tfloop.callbacks.base import Callback
from tfloop.monitors.base import MonitorBase
from tfloop.utils.checks import check_list_of

__all__ = ["checked_callbacks", "checked_monitors", "check_each_used_once"]


def checked_callbacks(callbacks: Any, what: str = "callbacks") -> list[Callback]:
    """``callbacks`` (one callback, an iterable of them or None) as a list, or a TypeError naming
    the value that is not a :class:`Callback`.

    Example:
        >>> checked_callbacks(ModelSaver())
        [ModelSaver(...)]
    """
    return check_list_of(callbacks, what, Callback) or []


def checked_monitors(monitors: Any) -> list[MonitorBase]:
    """``monitors`` as a list of monitor backends, or a TypeError naming a value that is not one."""
    checked = checked_callbacks(monitors, "monitors")
    for m in checked:
        if not isinstance(m, MonitorBase):
            raise TypeError(f"monitors must be MonitorBase objects; got {m!r} "
                            f"({type(m).__name__}).")
    return checked  # type: ignore[return-value]


def check_each_used_once(callbacks: Iterable[Callback], trainer: Any) -> None:
    """Refuse a callback object listed twice, or already used by another training than
    ``trainer``'s: its state (the steps a ModelSaver saved, the best value of EarlyStopping)
    belongs to one run, and reusing it would silently skip work."""
    seen = set()
    for cb in callbacks:
        if id(cb) in seen:
            raise ValueError(f"Callback {cb} appears twice in the callback list; a callback "
                             "object can be used once.")
        seen.add(id(cb))
        for layer in cb.walk():
            if layer.trainer is not None and layer.trainer is not trainer:
                raise ValueError(
                    f"Callback {layer} was already used by another training (trainer "
                    f"{type(layer.trainer).__name__}): a callback keeps the state of its training "
                    "(e.g. the steps a ModelSaver saved), so it serves one training only. Create "
                    "new callback objects for each training, e.g. callbacks=[ModelSaver()] in the "
                    "function that trains.")
