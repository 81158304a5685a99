"""Wrappers that decide *when* a callback's work runs; the callback itself says *what*.

Each states its schedule (``when``, :class:`~tfloop.callbacks.schedule.Schedule`); the
``Callbacks`` group follows it (:mod:`tfloop.callbacks.timetable`).
"""
from tfloop.callbacks.base import ProxyCallback
from tfloop.callbacks.lifecycle import HOOKS
from tfloop.callbacks.schedule import STEP_OR_EPOCH_MODE, TRIGGER_MODE, Schedule
from tfloop.utils.checks import check_callable

__all__ = ["PeriodicTrigger", "PeriodicCallback", "EnableCallbackIf"]


class PeriodicTrigger(ProxyCallback):
    """Call the wrapped callback's ``trigger()`` every k steps, k epochs and/or k seconds.

    Every other hook of the wrapped callback runs as usual, except ``trigger_epoch``: its
    ``trigger()`` now runs on this schedule instead of after every epoch. The ``Callbacks``
    group calls it on the schedule (``when``, mode ``"trigger"``); the periods mean what
    :mod:`tfloop.callbacks.schedule` says for every callback.

    Args:
        triggerable (Callback): the callback whose ``trigger()`` to schedule.
        every_k_steps (int): trigger after each step that makes ``global_step`` a multiple of k.
        every_k_epochs (int): trigger after the epoch when ``epoch_num % k == 0``.
        every_k_seconds (float): trigger after the first step that starts once k seconds passed
            since the last trigger (or the start of training).
        before_train (bool): also trigger once in ``before_train``.
        clock (callable): time source in seconds (for tests); monotonic time by default.

    Example:
        >>> PeriodicTrigger(ModelSaver(), every_k_steps=500, every_k_epochs=1)
    """

    def __init__(self, triggerable, every_k_steps=None, every_k_epochs=None, before_train=False,
                 *, every_k_seconds=None, clock=None):
        super().__init__(triggerable)
        when = Schedule(every_k_steps=every_k_steps,
                        every_k_epochs=every_k_epochs,
                        every_k_seconds=every_k_seconds,
                        before_train=bool(before_train), mode=TRIGGER_MODE, clock=clock)
        if not when.at_steps and when.every_k_epochs is None:
            raise ValueError("PeriodicTrigger needs every_k_steps, every_k_epochs or "
                             "every_k_seconds.")
        self.when = when

    def _trigger_epoch(self):
        """Nothing: the wrapped callback's ``trigger()`` runs on this schedule instead."""


class EnableCallbackIf(ProxyCallback, forwarding=True):
    """Run the wrapped callback's per-step and per-epoch hooks only when ``pred(self)`` is true.

    ``setup_graph``, ``before_train`` and ``after_train`` always run. ``after_run`` runs exactly
    for the steps whose ``before_run`` ran.

    Args:
        callback (Callback): the callback to enable or disable.
        pred (callable): ``pred(self) -> bool``; ``self`` is this wrapper, so ``self.global_step``,
            ``self.epoch_num`` and ``self.trainer`` are available.

    Example:
        >>> EnableCallbackIf(DumpTensors(["logits"]), lambda self: self.epoch_num > 10)
    """

    def __init__(self, callback, pred):
        super().__init__(callback)
        self._pred = check_callable(pred, "EnableCallbackIf: pred", signature="pred(self) -> bool")
        self._run_enabled = False

    def _before_run(self, ctx):
        self._run_enabled = bool(self._pred(self))
        if self._run_enabled:
            return self.cb.before_run(ctx)
        return None

    def _after_run(self, ctx, values):
        if self._run_enabled:
            self.cb.after_run(ctx, values)



def _gated(hook):
    """``EnableCallbackIf``'s underscore hook ``_<hook>``: the wrapped callback's ``hook`` when
    ``pred(self)`` is true."""
    def gate(self):
        if self._pred(self):
            getattr(self.cb, hook)()
    gate.__name__ = gate.__qualname__ = f"_{hook}"
    return gate


# The per-epoch and per-step hooks (the run hooks are gated together, above).
for _hook, _when in HOOKS.items():
    if _when in ("epoch", "step"):
        setattr(EnableCallbackIf, f"_{_hook}", _gated(_hook))
del _hook, _when


def _always(wrapper):
    return True


class PeriodicCallback(EnableCallbackIf):
    """Run all per-step and per-epoch hooks of the wrapped callback only every k steps or epochs.

    The per-step hooks run with the steps that make ``global_step`` a multiple of
    ``every_k_steps`` (``before_run`` goes with that step's ``session.run``; ``after_run`` and
    ``trigger_step`` see the multiple) and all through the epochs that are multiples of
    ``every_k_epochs``; the per-epoch hooks run in those epochs and whenever ``global_step`` is a
    multiple of ``every_k_steps`` at the time. The ``Callbacks`` group applies this schedule
    (``when``, mode ``"step_or_epoch"``).

    Args:
        callback (Callback): the callback to run less often.
        every_k_steps (int), every_k_epochs (int): the periods; at least one is required.

    Example:
        >>> PeriodicCallback(ProgressBar(), every_k_epochs=5)
    """

    def __init__(self, callback, every_k_steps=None, every_k_epochs=None):
        when = Schedule(every_k_steps=every_k_steps,
                        every_k_epochs=every_k_epochs,
                        mode=STEP_OR_EPOCH_MODE)
        if when.every_k_steps is None and when.every_k_epochs is None:
            raise ValueError("PeriodicCallback needs every_k_steps or every_k_epochs.")
        super().__init__(callback, _always)
        self.when = when
