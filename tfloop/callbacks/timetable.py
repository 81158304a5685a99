"""Which hooks of each listed callback run at each step and epoch: the schedules of a callback
and of everything it wraps, followed together.

A wrapper passes each hook call on to what it wraps, so a listed callback's hook runs when some
callback in its :meth:`~tfloop.callbacks.base.Callback.walk` does work in that hook and every
schedule from the listed one down to it lets the call through (``PeriodicCallback(
MergeAllSummaries(period=10), every_k_epochs=2)`` fetches the summaries at the steps 10, 20 ...
of even epochs). A ``"trigger"`` schedule (``PeriodicTrigger``) has the listed callback's
``trigger()`` called at its own steps and epochs, through the wrappers above it. Whether a
schedule is due is :class:`~tfloop.callbacks.schedule.ScheduleState`'s to say; this module only
combines the answers. The ``Callbacks`` group asks :meth:`Timetable.begin_step` before every
session call and :meth:`Timetable.epoch_calls` at every epoch hook;
:class:`~tfloop.callbacks.hooks.CallbackToHook` asks the same before each run of a session of
your own.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tfloop.callbacks.base import Callback
from tfloop.callbacks.lifecycle import RUN_HOOKS, STEP_HOOKS
from tfloop.callbacks.schedule import STEP_OR_EPOCH_MODE, TRIGGER_MODE, ScheduleState

__all__ = ["Timetable"]

# Per-step gates: None (every step), or alternatives, each the states that must all be due.
_Gate = tuple[tuple[ScheduleState, ...], ...] | None


def _open(gate: _Gate) -> bool:
    if gate is None:
        return True
    for states in gate:
        for state in states:
            if not state.hooks_due:
                break
        else:
            return True
    return False


def _gate(chain: list[Callback], states: dict[int, ScheduleState],
          works: Callable[[Callback], bool]) -> _Gate | bool:
    """The per-step gate of a chain's hooks that ``works`` says a callback works in: False when
    none in the chain does, None when some does on every step."""
    alternatives, above = [], []
    for layer in chain:
        if layer.when.gates_steps:
            above.append(states[id(layer)])
        if works(layer):
            if not above:
                return None
            alternatives.append(tuple(above))
    return tuple(alternatives) if alternatives else False


def _uses_run_hooks(cb: Callback) -> bool:
    return cb.when.fetches and cb._works_in(RUN_HOOKS)


def _uses_step_hook(cb: Callback) -> bool:
    return cb.when.step_hook and cb._works_in(STEP_HOOKS)


class _Entry:
    """One listed callback and the schedule states that decide its hook calls."""

    __slots__ = ("cb", "run", "step", "step_triggers", "epoch", "epoch_triggers",
                 "before_train_triggers")

    def __init__(self, cb: Callback, states: dict[int, ScheduleState]) -> None:
        chain = list(cb.walk())
        self.cb = cb
        self.run = _gate(chain, states, _uses_run_hooks)
        self.step = _gate(chain, states, _uses_step_hook)
        step_gates: list[ScheduleState] = []
        epoch_gates: list[ScheduleState] = []
        step_triggers, epoch_triggers = [], []
        for layer in chain:
            when, state = layer.when, states.get(id(layer))
            if when.triggers_after_steps:
                step_triggers.append((state, tuple(step_gates)))
            if when.mode == TRIGGER_MODE and when.every_k_epochs is not None:
                epoch_triggers.append((state, tuple(epoch_gates)))
            if when.gates_steps:
                step_gates.append(states[id(layer)])
            if when.gates_epochs:
                epoch_gates.append(states[id(layer)])
        self.step_triggers = tuple(step_triggers)
        self.epoch = tuple(epoch_gates)
        self.epoch_triggers = tuple(epoch_triggers)
        self.before_train_triggers = sum(1 for layer in chain if layer.when.before_train)

    def epoch_hooks_due(self, epoch: int, global_step: int) -> bool:
        return all(state.epoch_hooks_due(epoch, global_step) for state in self.epoch)

    def step_calls(self) -> list[str]:
        """The hooks to call after this step: ``trigger_step`` and one ``trigger`` per due
        step trigger."""
        calls = ["trigger_step"] if self.step is not False and _open(self.step) else []
        for state, gates in self.step_triggers:
            if state.trigger_due and all(gate.hooks_due for gate in gates):
                calls.append("trigger")
        return calls


class Timetable:
    """When each of a list of callbacks takes part in the steps and epochs, from the schedules of
    each and of what it wraps (see the module's docstring).

    Args:
        callbacks (list[Callback]): the listed callbacks, after their ``setup_graph``.
        run_item (callable): ``run_item(cb)`` is what :meth:`begin_step` returns for a callback
            whose ``before_run``/``after_run`` go with the step (the group's session hooks).

    Example:
        >>> timetable = Timetable(callbacks, run_item=lambda cb: cb)
        >>> timetable.start()
        >>> run_hooks = timetable.begin_step(before=9, after=10, epoch=2, last_of_epoch=False)
        >>> [(str(cb), hook) for cb, hook in timetable.step_calls]
        [('PeriodicTrigger(ModelSaver)', 'trigger')]
    """

    def __init__(self, callbacks: Sequence[Callback],
                 run_item: Callable[[Callback], Any] = lambda cb: cb) -> None:
        states = {id(layer): ScheduleState(layer.when) for cb in callbacks
                  for layer in cb.walk()
                  if layer.when.gates_steps or layer.when.gates_epochs or
                  layer.when.mode == TRIGGER_MODE}
        self._states = tuple(states.values())
        self._step_states = tuple(
            state for state in self._states
            if state.schedule.gates_steps or state.schedule.triggers_after_steps)
        self.entries = tuple(_Entry(cb, states) for cb in callbacks)
        self._run = tuple((run_item(e.cb), e.run) for e in self.entries if e.run is not False)
        self._all_run_items = tuple(item for item, gate in self._run if gate is None)
        self._always = self._step_states == ()
        # The calls after a step, and whether they change from step to step.
        self._stepping = tuple(e for e in self.entries if e.step is not False or e.step_triggers)
        self._steps_vary = any(e.step is not None or e.step_triggers for e in self._stepping)
        self.step_calls: list[tuple[Callback, str]] = [
            (e.cb, hook) for e in self._stepping for hook in e.step_calls()]
        # Whether begin_step needs the epoch (a PeriodicCallback's every_k_epochs, the last step
        # of each epoch).
        self.needs_epoch_at_steps = any(
            (state.schedule.mode == STEP_OR_EPOCH_MODE and state.schedule.every_k_epochs
             is not None) or state.schedule.last_step_of_epoch for state in self._step_states)

    @property
    def every_step(self) -> bool:
        """Whether no schedule names steps: every step has the same calls."""
        return self._always

    def start(self) -> None:
        """Training starts (before the first ``before_train``)."""
        for state in self._states:
            state.start()

    def run_items(self) -> tuple[Any, ...]:
        """The run items of the callbacks whose ``before_run``/``after_run`` go with every
        step."""
        return self._all_run_items

    def begin_step(self, before: int, after: int, epoch: int, last_of_epoch: bool
                   ) -> tuple[Any, ...]:
        """Decide the session call that takes ``global_step`` from ``before`` to ``after`` (in
        ``epoch``; its last step when ``last_of_epoch``): return the run items of the callbacks
        whose ``before_run``/``after_run`` go with it, in list order, and set
        :attr:`step_calls`, the ``(callback, hook)`` calls after it."""
        if self._always:
            return self._all_run_items
        for state in self._step_states:
            state.begin_step(before, after, epoch, last_of_epoch)
        if self._steps_vary:
            self.step_calls = [(e.cb, hook) for e in self._stepping for hook in e.step_calls()]
        return tuple([item for item, gate in self._run if gate is None or _open(gate)])

    def epoch_calls(self, hook: str, epoch: int, global_step: int
                    ) -> list[tuple[Callback, str]]:
        """The ``(callback, hook)`` calls of epoch hook ``hook`` (``before_epoch``,
        ``after_epoch``, ``trigger_epoch``) of ``epoch``, in list order, with ``global_step``
        steps finished; after ``trigger_epoch`` come the ``trigger`` calls of the epoch
        triggers."""
        calls = []
        for entry in self.entries:
            if entry.epoch_hooks_due(epoch, global_step):
                calls.append((entry.cb, hook))
            if hook == "trigger_epoch":
                calls.extend((entry.cb, "trigger") for state, gates in entry.epoch_triggers
                             if all(g.epoch_hooks_due(epoch, global_step) for g in gates) and
                             state.trigger_at_epoch(epoch))
        return calls
