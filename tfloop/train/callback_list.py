"""The trainer's callback list (:class:`RunCallbacks`), and what it must be: callbacks and
monitor backends of the right types, each object listed once, none serving another training."""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from tfloop.callbacks.base import Callback
from tfloop.callbacks.group import Callbacks
from tfloop.monitors.base import MonitorBase
from tfloop.tfutils.eager_capture import explain_eager_capture
from tfloop.utils import logger
from tfloop.utils.checks import check_list_of

__all__ = ["RunCallbacks", "checked_callbacks", "checked_monitors", "check_each_used_once"]

_C = TypeVar("_C")


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


class RunCallbacks:
    """The trainer's part that holds the run's callbacks: registered one by one, then put in
    their order and set up once (:meth:`set_up`), then queried. The trainer's ``callbacks``,
    ``callbacks_of``, ``step_callbacks`` and ``run_callbacks`` are this part's.

    Example:
        >>> trainer.callback_list.register(ModelSaver(), is_chief=True)
        True
        >>> trainer.callbacks_of(ModelSaver)
        [ModelSaver(...)]
    """

    def __init__(self) -> None:
        self._registered: list[Callback] = []
        self._group: Callbacks | None = None

    def register(self, cb: Callback | Sequence[Callback], is_chief: bool) -> bool:
        """Add a callback (or a list of them), chief-only ones skipped when not ``is_chief``;
        whether it was added (for a list: whether all were)."""
        if isinstance(cb, (list, tuple)):
            return all([self.register(c, is_chief) for c in cb])
        if not isinstance(cb, Callback):
            raise TypeError(f"register_callback needs a tfloop Callback, got {cb!r} "
                            f"({type(cb).__name__}).")
        if self._group is not None:
            raise RuntimeError(f"Cannot register {cb} after the callbacks were set up.")
        if not is_chief and cb.chief_only:
            logger.warning(f"Callback {cb} is chief-only, skipped on this worker.")
            return False
        self._registered.append(cb)
        return True

    def take_registered(self) -> list[Callback]:
        """The callbacks registered so far, the list emptied (to register them again in order)."""
        registered, self._registered = self._registered, []
        return registered

    def set_up(self, trainer: Any) -> None:
        """Make the registered callbacks, in their order, the run's, and run every
        ``setup_graph`` with ``trainer``."""
        check_each_used_once(self._registered, trainer)
        self._group = Callbacks(self._registered)
        with explain_eager_capture("A callback's setup_graph"):
            self._group.setup_graph(trainer)

    @property
    def group(self) -> Callbacks:
        """The :class:`Callbacks` group the trainer calls, once :meth:`set_up` made it."""
        if self._group is None:
            raise RuntimeError("The callbacks are not set up yet: call trainer.setup_callbacks "
                               "(trainer.train does) before initialize and main_loop.")
        return self._group

    @property
    def all(self) -> list[Callback]:
        """Every callback in the order they are called (after ``setup_callbacks``; before, those
        registered)."""
        return list(self._group) if self._group is not None else list(self._registered)

    def of(self, kind: type[_C]) -> list[_C]:
        """The callbacks that are a ``kind`` (an ``isinstance`` class), those inside wrappers
        (``PeriodicTrigger(ModelSaver())``) and groups too, in the order they are called.

        Example:
            >>> savers = trainer.callbacks_of(ModelSaver)
        """
        return [inner for cb in self.all for inner in cb.walk() if isinstance(inner, kind)]

    @property
    def step_callbacks(self) -> tuple[Callback, ...]:
        """The callbacks called at ``trigger_step`` after each step, in order (after
        ``setup_callbacks``; empty before)."""
        return self._group.step_callbacks if self._group is not None else ()

    @property
    def run_callbacks(self) -> tuple[Callback, ...]:
        """The callbacks whose ``before_run``/``after_run`` go with each step's ``session.run``,
        in order (after ``setup_callbacks``; empty before)."""
        return self._group.run_callbacks if self._group is not None else ()
