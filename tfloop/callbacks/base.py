"""The Callback base class: every hook of the training lifecycle, documented once, and the two
callbacks built on it that tensorpack keeps here, ``ProxyCallback`` and ``CallbackFactory``.

The trainer calls the public hooks (``before_run`` ...), which call the underscore ones
(``_before_run`` ...) that a callback defines; a callback may define a public hook instead, as in
Keras, with the same meaning. Per-step hooks are called only for the callbacks whose classes define
them and whose schedules (``cb.when``, :mod:`tfloop.callbacks.schedule`) keep them
(:meth:`Callback.uses_run_hooks`, :meth:`Callback.uses_step_hook`), at the steps the schedules
name. The order of the calls and when each hook runs: :mod:`tfloop.callbacks.lifecycle`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from tfloop.callbacks.lifecycle import HOOKS, RUN_HOOKS, STEP_HOOKS
from tfloop.callbacks.run_args import answering_as_run_args, as_run_args
from tfloop.callbacks.schedule import EVERY_EPOCH, TRIGGER_MODE, Schedule
from tfloop.callbacks.trainer_view import TrainerView
from tfloop.compat import tfv1
from tfloop.tfutils.common import UnknownNameError, get_op_or_tensor_by_name

__all__ = ["Callback", "ProxyCallback", "CallbackFactory", "StopTraining"]

_Hook = Callable[["CallbackFactory"], object]  # a CallbackFactory function: fn(self)


def _attaching_first(setup_graph: Callable[..., Any]) -> Callable[..., Any]:
    """A class's own public ``setup_graph``, run with ``trainer`` and ``graph`` already set."""
    @functools.wraps(setup_graph)
    def attached(self: Callback, trainer: TrainerView) -> None:
        self.trainer = trainer
        self.graph = tfv1.get_default_graph()
        setup_graph(self, trainer)
    return attached


class StopTraining(Exception):
    """Raise from any callback hook to end training cleanly; ``after_train`` still runs.

    Example:
        >>> def _trigger_epoch(self):
        ...     if self.trainer.monitors.get_latest("val-error") < 0.01:
        ...         raise StopTraining("validation error below 1%")
    """


class Callback:
    """Base class for everything that happens in training besides the training step itself.

    Attributes:
        trainer (TrainerView): the trainer, set in ``setup_graph``; what a callback may use of it
            is what :class:`~tfloop.callbacks.trainer_view.TrainerView` lists.
        graph: the training graph, set in ``setup_graph``.
        chief_only (bool): whether the callback runs only on the chief worker (True by default;
            monitors and graph-side helpers set it False).
        when (Schedule): when the callback works (:mod:`tfloop.callbacks.schedule`); set by the
            trigger wrappers and by a callback's period flags, read once by the ``Callbacks``
            group after ``setup_graph``.

    Example:
        >>> class PrintLoss(Callback):
        ...     def _setup_graph(self):
        ...         self.loss = self.get_tensors_maybe_in_tower(["cost"])[0]
        ...     def _before_run(self, ctx):
        ...         return [self.loss]                  # fetched along with the training step
        ...     def _after_run(self, ctx, values):
        ...         print(self.global_step, values.results[0])
    """

    _chief_only = True
    _dispatcher = False
    # The class whose hooks only pass calls on (a wrapper's, a dispatcher's), and those above it.
    _hooks_below: type[Callback] | None = None
    when: Schedule = EVERY_EPOCH
    name_scope: str = ""
    trainer: TrainerView = None  # type: ignore[assignment]  # None until setup_graph
    graph: Any = None

    def __init_subclass__(cls, dispatcher: bool = False, forwarding: bool = False,
                          **kwargs: Any) -> None:
        """Give a class's own public hooks (Keras style) the meaning of the underscore ones: its
        ``before_run`` answers as ``_before_run`` does; its ``setup_graph`` finds ``trainer`` set.

        Args:
            dispatcher (bool): a framework dispatcher (:class:`Callbacks`, and its subclasses),
                whose public hooks call other callbacks' and are left as they are.
            forwarding (bool): the class's hooks only pass calls on to the callbacks it wraps
                (``ProxyCallback``, ``EnableCallbackIf``): whether it works in a hook is what
                its subclasses define below it, and what the wrapped callbacks do.
        """
        super().__init_subclass__(**kwargs)
        if dispatcher or forwarding:
            cls._hooks_below = cls
        cls._dispatcher = bool(dispatcher) or cls._dispatcher
        if cls._dispatcher:
            return
        if "before_run" in cls.__dict__:
            cls.before_run = answering_as_run_args(cls.__dict__["before_run"])  # type: ignore[method-assign]
        if "setup_graph" in cls.__dict__:
            cls.setup_graph = _attaching_first(cls.__dict__["setup_graph"])  # type: ignore[method-assign]

    # ---- public methods: called by the trainer -------------------------------------------------
    def setup_graph(self, trainer: TrainerView) -> None:
        """Attach to ``trainer`` and let the callback add what it needs to the graph."""
        self.trainer = trainer
        self.graph = tfv1.get_default_graph()
        scope = self.name_scope or type(self).__name__
        with self.graph.name_scope(scope.replace("_", "")):
            self._setup_graph()

    def before_train(self) -> None:
        self._before_train()

    def after_train(self) -> None:
        self._after_train()

    def before_epoch(self) -> None:
        self._before_epoch()

    def after_epoch(self) -> None:
        self._after_epoch()

    def before_run(self, ctx: Any) -> Any:
        """Return the callback's extra fetches/feeds for this step as ``SessionRunArgs`` (or
        None)."""
        return as_run_args(self._before_run(ctx), self.graph, self)

    def after_run(self, ctx: Any, values: Any) -> None:
        self._after_run(ctx, values)

    def trigger_step(self) -> None:
        self._trigger_step()

    def trigger_epoch(self) -> None:
        self._trigger_epoch()

    def trigger(self) -> None:
        self._trigger()

    def state_dict(self) -> Any:
        """State to save with a checkpoint so that a resumed run continues exactly (or None)."""
        return self._state_dict()

    def load_state_dict(self, state: Any) -> None:
        self._load_state_dict(state)

    # ---- methods to override --------------------------------------------------------------------
    def _setup_graph(self) -> None:
        """Create the ops and tensors the callback needs. All graph changes belong here."""

    def _before_train(self) -> None:
        """Called once before the first step, after session creation and graph finalization."""

    def _after_train(self) -> None:
        """Called once at the end of training, also when training raised."""

    def _before_epoch(self) -> None:
        """Called right before each epoch; keep it fast."""

    def _after_epoch(self) -> None:
        """Called right after the last step of each epoch; keep it fast."""

    def _before_run(self, ctx: Any) -> Any:
        """Return what to run along with the step: None, a list of tensors/ops/names, or
        ``tf.compat.v1.train.SessionRunArgs(fetches, feed_dict, options)``."""
        return None

    def _after_run(self, ctx: Any, values: Any) -> None:
        """Receive ``values.results``: the results of exactly this callback's fetches.
        ``ctx.request_stop()`` ends training after this step."""

    def _trigger_step(self) -> None:
        """Called after each step; keep it light."""

    def _trigger_epoch(self) -> None:
        """Called after each epoch; calls :meth:`trigger` by default (unless the callback's
        schedule times ``trigger()`` itself: ``when.mode == "trigger"``)."""
        if self.when.mode != TRIGGER_MODE:
            self.trigger()

    def _trigger(self) -> None:
        """The callback's periodic work, whatever its period: ``PeriodicTrigger`` decides when."""

    def _state_dict(self) -> Any:
        return None

    def _load_state_dict(self, state: Any) -> None:
        """Restore what :meth:`_state_dict` returned."""

    # ---- what the trainer asks ------------------------------------------------------------------
    @classmethod
    def defines_hook(cls, *names: str, below: type[Callback] | None = None) -> bool:
        """Whether the class defines one of the hooks ``names`` (public or underscore) itself, not
        inheriting it from ``below`` (``Callback`` by default), e.g.
        ``ModelSaver.defines_hook("_trigger")``. :meth:`uses_run_hooks` and
        :meth:`uses_step_hook` answer from it and the schedules."""
        base = Callback if below is None else below
        return any(getattr(cls, name) is not getattr(base, name) for name in names)

    def _works_in(self, names: tuple[str, ...]) -> bool:
        """Whether the callback has one of the hooks ``names`` of its own, below what only passes
        calls on: defined by its class, or set on the object itself (``setattr(cb, "_trigger_step",
        fn)``)."""
        base = Callback if self._hooks_below is None else self._hooks_below
        return any(getattr(getattr(self, name), "__func__", getattr(self, name))
                   is not getattr(base, name) for name in names)

    # Computed here only, from the hooks each class defines and the schedules: never overridden.
    def uses_run_hooks(self) -> bool:
        """Whether the callback takes part in the step's ``session.run``: whether it, or one it
        wraps, defines ``_before_run`` or ``_after_run`` (or their public forms) and its schedule
        keeps them (``when.fetches``). The group asks once, after ``setup_graph``."""
        return any(cb.when.fetches and cb._works_in(RUN_HOOKS) for cb in self.walk())

    def uses_step_hook(self) -> bool:
        """Whether the callback is called after some steps: whether it, or a callback it wraps,
        defines ``_trigger_step`` (or ``trigger_step``) and its schedule keeps it
        (``when.step_hook``), or has its ``trigger()`` scheduled at steps
        (``when.triggers_after_steps``, e.g. ``PeriodicTrigger(..., every_k_steps=k)``)."""
        return any((cb.when.step_hook and cb._works_in(STEP_HOOKS)) or
                   cb.when.triggers_after_steps for cb in self.walk())

    @property
    def step_period(self) -> int | None:
        """The steps between two runs of the callback's per-step work (its schedule's
        ``every_k_steps``, else that of the callback it wraps), or None (e.g.
        ``PeriodicTrigger(cb, every_k_steps=100).step_period == 100``)."""
        return next((cb.when.every_k_steps for cb in self.walk() if cb.when.every_k_steps),
                    None)

    def walk(self) -> Iterator[Callback]:
        """Yield this callback and then, depth first, every callback it wraps or holds.

        Example:
            >>> [str(cb) for cb in PeriodicTrigger(ModelSaver(), every_k_epochs=1).walk()]
            ['PeriodicTrigger(ModelSaver)', 'ModelSaver']
        """
        yield self

    # ---- helpers --------------------------------------------------------------------------------
    @property
    def epoch_num(self) -> int:
        """The current epoch, starting at ``starting_epoch`` (1 by default)."""
        return self.trainer.epoch_num

    @property
    def global_step(self) -> int:
        """Training steps finished so far, over all runs (resumed runs continue counting)."""
        return self.trainer.global_step

    @property
    def local_step(self) -> int:
        """The step within the current epoch, from 0."""
        return self.trainer.local_step

    @property
    def chief_only(self) -> bool:
        return self._chief_only

    @chief_only.setter
    def chief_only(self, value: bool) -> None:
        self._chief_only = bool(value)

    def set_chief_only(self, v: bool = True) -> Callback:
        """Set :attr:`chief_only` and return the callback (tensorpack's chaining form:
        ``CallbackFactory(...).set_chief_only(False)``)."""
        self.chief_only = v
        return self

    def get_tensors_maybe_in_tower(self, names: list[str] | tuple[str, ...]) -> list[Any]:
        """Find tensors by name: in the graph first, then in the first training tower.

        Raises:
            UnknownNameError: a name is in neither; the message lists close matches.
        """
        towers = self.trainer.towers
        tower = towers.training()[0] if towers is not None and len(towers.training()) else None
        tensors = []
        for name in names:
            try:
                tensors.append(get_op_or_tensor_by_name(name, self.graph))
            except UnknownNameError as e:
                if tower is None:
                    raise UnknownNameError(f"{self}: {e}") from None
                try:
                    tensors.append(tower.get_tensor(name))
                except UnknownNameError:
                    raise UnknownNameError(f"{self}: {e}") from None
        return tensors

    def __str__(self) -> str:
        return type(self).__name__

    __repr__ = __str__


class ProxyCallback(Callback, forwarding=True):
    """A callback that forwards every hook to another one; subclass it to change a few of them.

    Example:
        >>> class Quiet(ProxyCallback):
        ...     def _trigger_step(self):
        ...         pass                                # drop the wrapped callback's per-step work
    """

    def __init__(self, cb: Callback) -> None:
        if not isinstance(cb, Callback):
            raise TypeError(f"{type(self).__name__} wraps a Callback, got {cb!r}.")
        self.cb = cb
        self._chief_only = cb.chief_only

    def walk(self) -> Iterator[Callback]:
        yield self
        yield from self.cb.walk()

    def _setup_graph(self):
        with self.graph.name_scope(None):
            self.cb.setup_graph(self.trainer)

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.cb})"

    __repr__ = __str__


def _forwarding(hook: str) -> Callable[..., Any]:
    """``ProxyCallback``'s underscore hook ``_<hook>``: call the wrapped callback's ``hook``."""
    def forward(self: ProxyCallback, *args: Any) -> Any:
        return getattr(self.cb, hook)(*args)
    forward.__name__ = forward.__qualname__ = f"_{hook}"
    forward.__doc__ = f"Forward to the wrapped callback's ``{hook}``."
    return forward


for _hook in HOOKS:
    setattr(ProxyCallback, f"_{_hook}", _forwarding(_hook))
del _hook


class CallbackFactory(Callback):
    """A callback made of plain functions, each taking the callback itself.

    Args:
        setup_graph, before_train, trigger, after_train (callable): ``fn(self)``; any may be None.

    Example:
        >>> CallbackFactory(trigger=lambda self: print("epoch", self.epoch_num, "done"))
    """

    def __init__(self, setup_graph: _Hook | None = None, before_train: _Hook | None = None,
                 trigger: _Hook | None = None, after_train: _Hook | None = None) -> None:
        self._cb_setup_graph = setup_graph
        self._cb_before_train = before_train
        self._cb_trigger = trigger
        self._cb_after_train = after_train

    def _setup_graph(self):
        if self._cb_setup_graph:
            self._cb_setup_graph(self)

    def _before_train(self):
        if self._cb_before_train:
            self._cb_before_train(self)

    def _trigger(self):
        if self._cb_trigger:
            self._cb_trigger(self)

    def _after_train(self):
        if self._cb_after_train:
            self._cb_after_train(self)
