"""When a callback works, as a value (:class:`Schedule`, a callback's ``when``), and the one place
that turns a schedule into "due now" (:class:`ScheduleState`): every period of tfloop — every k
steps, k epochs or k seconds, step points, the multiples of ``steps_per_run`` — is computed here.

A callback says *what* it does in its hooks and *when* in its schedule. The trigger wrappers
(``PeriodicTrigger``, ``PeriodicCallback``) and tensorpack's period flags (``every_k_steps=``,
``period=``, ``step_based=``, ``run_step=`` ...) only set it. The ``Callbacks`` group fires each
callback on it (:mod:`tfloop.callbacks.timetable`).

**Every k steps** means the step that makes ``global_step`` (the steps finished) a multiple of k:
with k = 10, the steps that end at global step 10, 20, 30. The callback's ``before_run`` goes
with the ``session.run`` of that step (it sees ``global_step`` 9, 19, 29: the steps finished
before it), its ``after_run``, ``trigger_step`` and ``trigger()`` come after it (they see 10, 20,
30). So a callback's fetches and its trigger always see the same step, and a resumed run keeps the
same steps. With ``steps_per_run = s`` a step period is a multiple of s and the due steps end a
session call. **Every k epochs**: after epoch e when ``e % k == 0``. **Every k seconds**: the
first step that starts once k seconds passed since the schedule last fired (or training started).
"""
from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable

from tfloop.utils.checks import check_one_of, check_positive_number, is_int
from tfloop.utils.timer import Clock

__all__ = ["Schedule", "ScheduleState", "EVERY_EPOCH", "HOOKS_MODE", "TRIGGER_MODE",
           "STEP_OR_EPOCH_MODE"]

# What a schedule times (Schedule.mode).
HOOKS_MODE = "hooks"
TRIGGER_MODE = "trigger"
STEP_OR_EPOCH_MODE = "step_or_epoch"
_MODES = (HOOKS_MODE, TRIGGER_MODE, STEP_OR_EPOCH_MODE)


def _period(value: float | None, name: str) -> float | None:
    return None if value is None else check_positive_number(value, name)


def _points(points: tuple[int, ...]) -> tuple[int, ...]:
    if not isinstance(points, (tuple, list)) or not all(is_int(p) and p >= 0 for p in points):
        raise ValueError(f"Schedule: step_points must be a tuple of global steps (ints >= 0), "
                         f"e.g. (1000, 5000); got {points!r}.")
    return tuple(sorted({int(p) for p in points}))


@dataclasses.dataclass(frozen=True)
class Schedule:
    """When a callback works.

    Its **steps** are those named by ``every_k_steps``, ``every_k_seconds``, ``step_points`` and
    ``last_step_of_epoch`` together; a schedule that names none has every step. Its **epochs**
    are every ``every_k_epochs``-th one, or every epoch. ``mode`` says what they time:

    * ``"hooks"`` (a callback's own period): its per-step hooks (``before_run``/``after_run``
      and ``trigger_step``) run at its steps, its per-epoch hooks (``before_epoch``,
      ``after_epoch``, ``trigger_epoch``) in its epochs.
    * ``"trigger"`` (``PeriodicTrigger``): its ``trigger()`` runs after its steps, after its
      epochs when ``every_k_epochs`` is given, and before training with ``before_train`` —
      instead of after every epoch; its other hooks run as the callback it wraps says.
    * ``"step_or_epoch"`` (``PeriodicCallback``): every per-step and per-epoch hook runs when the
      step or the epoch is due: per-step hooks at its steps and all through its epochs, per-epoch
      hooks in its epochs and whenever ``global_step`` is a multiple of ``every_k_steps``.

    Attributes:
        every_k_steps (int): the steps that make ``global_step`` a multiple of k; with
            ``steps_per_run`` it must be a multiple of it.
        every_k_epochs (int): the epochs e with ``e % k == 0``.
        every_k_seconds (float): the first step that starts once k seconds passed since the
            schedule last fired (or training started), measured on ``clock``.
        before_train (bool): (``"trigger"`` mode) ``trigger()`` also runs once before training.
        step_points (tuple[int]): the steps that reach these global steps (a step-based
            hyper-parameter schedule); a point between two session calls is reached late.
        last_step_of_epoch (bool): the last step of every epoch too.
        fetches (bool): its ``before_run``/``after_run`` (when its class defines them) take part
            in the ``session.run`` of its steps. False: it adds nothing to any step.
        step_hook (bool): its ``trigger_step`` (when its class defines it) is called after its
            steps. False: it does no per-step work.
        mode (str): what the steps and epochs time, see above.
        clock (callable): the time source of ``every_k_seconds`` (for tests); monotonic time by
            default. Not part of the value's equality.

    A callback's class-level default, :data:`EVERY_EPOCH`, keeps every hook its class defines.
    A callback whose schedule depends on what it finds in the graph sets it in ``setup_graph``.

    Example:
        >>> class EveryFifty(Callback):
        ...     when = Schedule(every_k_steps=50)       # trigger_step after steps 50, 100, ...
        ...     def _trigger_step(self):
        ...         print("fifty more steps")
        >>> PeriodicTrigger(ModelSaver(), every_k_steps=500).when.mode
        'trigger'
    """

    every_k_steps: int | None = None
    every_k_epochs: int | None = None
    every_k_seconds: float | None = None
    before_train: bool = False
    step_points: tuple[int, ...] = ()
    last_step_of_epoch: bool = False
    fetches: bool = True
    step_hook: bool = True
    mode: str = HOOKS_MODE
    clock: Callable[[], float] | None = dataclasses.field(default=None, compare=False,
                                                          repr=False)

    def __post_init__(self) -> None:
        for name in ("every_k_steps", "every_k_epochs", "every_k_seconds"):
            _period(getattr(self, name), name)
        check_one_of(self.mode, "Schedule: mode", _MODES)
        object.__setattr__(self, "step_points", _points(self.step_points))
        if self.before_train and self.mode != TRIGGER_MODE:
            raise ValueError(f"Schedule(before_train=True) times a trigger() before training; "
                             f"it needs mode='trigger', got mode={self.mode!r}.")

    @property
    def at_steps(self) -> bool:
        """Whether it names steps (every k steps or k seconds, step points, the last step of
        each epoch)."""
        return self.every_k_steps is not None or self.every_k_seconds is not None or \
            bool(self.step_points) or self.last_step_of_epoch

    @property
    def gates_steps(self) -> bool:
        """Whether it keeps the per-step hooks (its own and those of what it wraps) from some
        steps."""
        return self.mode == STEP_OR_EPOCH_MODE or (self.mode == HOOKS_MODE and self.at_steps)

    @property
    def gates_epochs(self) -> bool:
        """Whether it keeps the per-epoch hooks (its own and those of what it wraps) from some
        epochs."""
        return self.mode == STEP_OR_EPOCH_MODE or (
            self.mode == HOOKS_MODE and self.every_k_epochs is not None)

    @property
    def triggers_after_steps(self) -> bool:
        """Whether its ``trigger()`` runs after some steps (``"trigger"`` mode with steps)."""
        return self.mode == TRIGGER_MODE and self.at_steps

    def fits_steps_per_run(self, steps_per_run: int) -> bool:
        """Whether ``every_k_steps`` (if any) lands on session calls of ``steps_per_run`` steps."""
        return not self.every_k_steps or self.every_k_steps % steps_per_run == 0

    def late_points(self, steps_per_run: int) -> list[int]:
        """The step points between two session calls of ``steps_per_run`` steps."""
        return [p for p in self.step_points if p % steps_per_run]

    def replace(self, **changes: object) -> Schedule:
        """A copy with ``changes`` (field names as keywords)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# Every hook the class defines, trigger() after each epoch: a callback that states nothing.
EVERY_EPOCH = Schedule()


class ScheduleState:
    """A schedule followed through one training: whether it is due now.

    The dispatcher calls :meth:`start` before training and :meth:`begin_step` before each
    session call, which sets :attr:`hooks_due` (its per-step gate lets that step's hooks through)
    and :attr:`trigger_due` (``"trigger"`` mode: its ``trigger()`` runs after that step); it asks
    :meth:`epoch_hooks_due` and :meth:`trigger_at_epoch` at each epoch hook. Firing restarts the
    ``every_k_seconds`` count.

    Example:
        >>> state = ScheduleState(Schedule(every_k_steps=10, mode="trigger"))
        >>> state.start()
        >>> state.begin_step(before=9, after=10, epoch=2, last_of_epoch=False)
        >>> state.trigger_due
        True
    """

    __slots__ = ("schedule", "hooks_due", "trigger_due", "_clock", "_fired_at")

    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.hooks_due = True
        self.trigger_due = False
        self._clock = schedule.clock or Clock()
        self._fired_at = 0.0

    def start(self) -> None:
        """Training starts: the seconds count from now."""
        if self.schedule.every_k_seconds is not None:
            self._fired_at = self._clock()

    def begin_step(self, before: int, after: int, epoch: int, last_of_epoch: bool) -> None:
        """Decide for the session call that takes ``global_step`` from ``before`` to ``after``,
        in ``epoch`` (its last step when ``last_of_epoch``)."""
        s = self.schedule
        due = s.last_step_of_epoch and last_of_epoch
        k = s.every_k_steps
        if k is not None and after // k > before // k:
            due = True
        if s.step_points and bisect.bisect_right(s.step_points, after) > \
                bisect.bisect_right(s.step_points, before):
            due = True
        if s.every_k_seconds is not None:
            now = self._clock()
            if due or now - self._fired_at >= s.every_k_seconds:
                due, self._fired_at = True, now
        if s.mode == TRIGGER_MODE:
            self.trigger_due = due
        elif s.mode == HOOKS_MODE:
            self.hooks_due = due or not s.at_steps
        else:
            self.hooks_due = due or self._epoch_due(epoch)

    def _epoch_due(self, epoch: int) -> bool:
        k = self.schedule.every_k_epochs
        return k is not None and epoch % k == 0

    def epoch_hooks_due(self, epoch: int, global_step: int) -> bool:
        """Whether its per-epoch gate lets an epoch hook of ``epoch`` through, called when
        ``global_step`` steps are finished."""
        s = self.schedule
        if s.mode == HOOKS_MODE:
            return s.every_k_epochs is None or self._epoch_due(epoch)
        if s.mode == TRIGGER_MODE:
            return True
        k = s.every_k_steps
        return self._epoch_due(epoch) or (k is not None and global_step % k == 0)

    def trigger_at_epoch(self, epoch: int) -> bool:
        """Whether its ``trigger()`` runs after ``epoch`` (``"trigger"`` mode); firing restarts
        the seconds."""
        due = self.schedule.mode == TRIGGER_MODE and self._epoch_due(epoch)
        if due and self.schedule.every_k_seconds is not None:
            self._fired_at = self._clock()
        return due
