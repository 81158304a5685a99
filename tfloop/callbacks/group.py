"""Calling a list of callbacks, in order, at every point of the lifecycle."""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.callbacks.flow import STOP_EPOCH_HOOK, StopEpoch, misplaced_stop_epoch
from tfloop.callbacks.lifecycle import annotate_exception
from tfloop.callbacks.timetable import Timetable
from tfloop.callbacks.timing import CallbackTimeLogger
from tfloop.callbacks.trainer_view import TrainerView, expects_last_step
from tfloop.utils import logger
from tfloop.utils.coerce import tensorpack_keywords

__all__ = ["Callbacks"]


class Callbacks(Callback, dispatcher=True):
    """Dispatch each hook to a list of callbacks, in list order, when their schedules say.

    After every ``setup_graph`` the group reads each callback's schedule (``cb.when``) and those
    of what it wraps into a :class:`~tfloop.callbacks.timetable.Timetable`, and checks the step
    periods against the trainer's ``steps_per_run`` (:meth:`check_steps_per_run`). Before each
    step, :meth:`begin_step` picks the callbacks due at it: the session runs their
    ``before_run``/``after_run`` with the step, and :meth:`trigger_step` then calls their
    ``trigger_step`` (and the ``trigger()`` of a ``PeriodicTrigger`` due at that step). A
    callback not due at a step is not called at all, and one that does nothing per step costs
    nothing per step. Epoch hooks go to the callbacks whose schedules keep that epoch. With a
    :class:`CallbackTimeLogger` among them, every call goes through its clock (:meth:`_call`).
    ``after_train`` runs for every callback even when some raise; the first error is re-raised
    afterwards. Errors are logged with the callback and hook that raised them. A ``Callbacks``
    group in the list is replaced by its callbacks.

    Attributes:
        step_callbacks (tuple): the callbacks called after some steps: their ``trigger_step``,
            or a ``trigger()`` scheduled at steps (after setup).
        run_callbacks (tuple): the callbacks whose ``before_run``/``after_run`` go with some
            steps' ``session.run`` (after setup). The group does not call these two hooks
            itself: the trainer gives the session the hooks of each step's due ones.

    Example:
        >>> group = Callbacks([ModelSaver(), ProgressBar()])
        >>> group.setup_graph(trainer)
    """

    _chief_only = False

    @tensorpack_keywords(cbs="callbacks")
    def __init__(self, callbacks: Sequence[Callback]) -> None:
        self.cbs: list[Callback] = []
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"Every callback must be a tfloop Callback; got {cb!r} "
                                f"({type(cb).__name__}).")
            self.cbs.extend(cb.cbs if isinstance(cb, Callbacks) else [cb])
        self.step_callbacks: tuple[Callback, ...] = ()
        self.run_callbacks: tuple[Callback, ...] = ()
        self._timer: CallbackTimeLogger | None = None
        self._timetable = Timetable(())

    def _setup_graph(self):
        for cb in self.cbs:
            self._call(cb, "setup_graph", self.trainer)
        self.step_callbacks = tuple(cb for cb in self.cbs if cb.uses_step_hook())
        self.run_callbacks = tuple(cb for cb in self.cbs if cb.uses_run_hooks())
        self.check_steps_per_run(self.trainer.steps_per_run)
        self._timetable = Timetable(self.cbs, run_item=lambda cb: _RunHook(self, cb))
        self._timer = next((cb for cb in self.cbs if isinstance(cb, CallbackTimeLogger)), None)
        if self._timer is not None:
            self._timer.watch([cb for cb in self.cbs if cb is not self._timer])

    def check_steps_per_run(self, steps_per_run: int) -> None:
        """Refuse step periods that cannot land on a session call's boundary; warn about
        step points that will land late. Every callback's schedule and those of what it wraps
        are checked, here only.

        Raises:
            ValueError: a schedule's ``every_k_steps`` (e.g. a ``PeriodicTrigger``'s) is not a
                multiple of ``steps_per_run``.
        """
        if steps_per_run == 1:
            return
        for listed, cb in ((top, inner) for top in self.cbs for inner in top.walk()):
            if not cb.when.fits_steps_per_run(steps_per_run):
                raise ValueError(
                    f"{listed} runs every {cb.when.every_k_steps} steps, which is not a multiple "
                    f"of steps_per_run={steps_per_run}: steps only end between session calls, "
                    f"i.e. at multiples of {steps_per_run}. Use a multiple of steps_per_run.")
            late = cb.when.late_points(steps_per_run)
            if late:
                logger.warning(
                    f"{cb}: step-based schedule points {late} are not multiples of "
                    f"steps_per_run={steps_per_run}; each takes effect at the next multiple.")

    def setup_graph(self, trainer: TrainerView) -> None:
        self.trainer = trainer
        self._setup_graph()

    def walk(self) -> Iterator[Callback]:
        yield self
        for cb in self.cbs:
            yield from cb.walk()

    def _call(self, cb: Callback, hook: str, *args: Any, after_step: bool = False) -> Any:
        """Call ``cb``'s public ``hook``: every hook the group dispatches goes through here, the
        one place that names the callback and hook of an error, and times it when the group has
        a :class:`CallbackTimeLogger`. ``StopTraining`` and ``StopEpoch`` (in ``trigger_step``,
        or a ``trigger()`` called ``after_step``) are clean stops, passed on as they are."""
        try:
            if self._timer is None:
                return getattr(cb, hook)(*args)
            return self._timer.time_call(cb, hook, args)
        except StopEpoch as stop:
            if hook != STOP_EPOCH_HOOK and not after_step:
                raise misplaced_stop_epoch(cb, hook, stop) from None
            raise
        except StopTraining:
            raise
        except Exception as e:
            annotate_exception(e, cb, hook)
            raise

    def _call_epoch_hook(self, hook: str) -> None:
        """Call ``hook`` of the callbacks whose schedules keep the current epoch."""
        for cb, name in self._timetable.epoch_calls(hook, self.epoch_num, self.global_step):
            self._call(cb, name)

    def run_hooks(self) -> tuple[_RunHook, ...]:
        """The hooks a :class:`~tfloop.tfutils.hooked_session.HookedSession` runs with every
        step (``before_run``/``after_run`` of each callback that schedules them on no step),
        through :meth:`_call`: the session's hooks until the first :meth:`begin_step`."""
        return self._timetable.run_items()

    def begin_step(self) -> tuple[_RunHook, ...]:
        """Decide the step about to run (the next session call): return the hooks of the
        callbacks whose ``before_run``/``after_run`` go with it, in list order, and keep the
        calls :meth:`trigger_step` makes after it."""
        trainer = self.trainer
        before = trainer.global_step
        return self._timetable.begin_step(
            before, before + trainer.steps_per_run, trainer.epoch_num, expects_last_step(trainer))

    def _before_train(self):
        self._timetable.start()
        for entry in self._timetable.entries:
            self._call(entry.cb, "before_train")
            for _ in range(entry.before_train_triggers):
                self._call(entry.cb, "trigger")

    def _after_train(self):
        first_error = None
        for cb in self.cbs:
            try:
                self._call(cb, "after_train")
            except BaseException as e:
                if first_error is None:
                    first_error = e
        if first_error is not None:
            raise first_error

    def _before_epoch(self):
        if self._timer is not None:
            self._timer.start_epoch()
        self._call_epoch_hook("before_epoch")

    def _after_epoch(self):
        self._call_epoch_hook("after_epoch")

    def trigger_step(self) -> None:
        """After the step :meth:`begin_step` decided: the ``trigger_step`` of the callbacks due
        at it and the ``trigger()`` of the triggers due at it, in list order."""
        ending_epoch = None
        for cb, hook in self._timetable.step_calls:
            try:
                self._call(cb, hook, after_step=True)
            except StopEpoch as e:  # every callback still sees this step; the epoch ends after it
                ending_epoch = ending_epoch or e
        if ending_epoch is not None:
            raise ending_epoch

    def _trigger_epoch(self):
        self._call_epoch_hook("trigger_epoch")
        if self._timer is not None:
            self._timer.end_epoch()

    def __iter__(self) -> Iterator[Callback]:
        return iter(self.cbs)

    def __len__(self) -> int:
        return len(self.cbs)

    def __str__(self) -> str:
        return f"Callbacks({', '.join(str(cb) for cb in self.cbs)})"


class _RunHook:
    """One callback's ``before_run``/``after_run``, called by the session through its group's
    :meth:`Callbacks._call` (so that its errors are annotated as every other hook's)."""

    __slots__ = ("call", "cb")

    def __init__(self, group: Callbacks, cb: Callback) -> None:
        self.call = group._call
        self.cb = cb

    def before_run(self, ctx: Any) -> Any:
        return self.call(self.cb, "before_run", ctx)

    def after_run(self, ctx: Any, values: Any) -> None:
        self.call(self.cb, "after_run", ctx, values)

    def __str__(self) -> str:
        return str(self.cb)
