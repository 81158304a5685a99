"""When a callback works, as a value: :class:`Schedule`, a callback's ``when``.

A callback says *what* it does in its hooks and *when* in its schedule. The trigger wrappers
(``PeriodicTrigger``, ``PeriodicCallback``) and tensorpack's period flags (``every_k_steps=``,
``enable_step=``, ``step_based=``, ``run_step=`` ...) only set it. The ``Callbacks`` group reads
the schedules once, after every ``setup_graph``: with the hooks each class defines they give the
per-step lists (who takes part in the step's ``session.run``, who is called at
``trigger_step``), and the step periods are checked against ``steps_per_run`` there.
"""
from __future__ import annotations

import dataclasses

from tfloop.utils.checks import check_positive_number

__all__ = ["Schedule", "EVERY_EPOCH"]


def _period(value: float | None, name: str) -> float | None:
    return None if value is None else check_positive_number(value, name)


@dataclasses.dataclass(frozen=True)
class Schedule:
    """When a callback works.

    Attributes:
        every_k_steps (int): its per-step work (or its ``trigger()``) repeats every k global
            steps; must be a multiple of ``steps_per_run``.
        every_k_epochs (int): its ``trigger()`` runs every k epochs.
        every_k_seconds (float): its ``trigger()`` runs after a step once k seconds passed.
        before_train (bool): its ``trigger()`` also runs once before training.
        step_points (tuple[int]): global steps at which it changes something (a step-based
            hyper-parameter schedule); a point between two session calls takes effect late.
        fetches (bool): its ``before_run``/``after_run`` (when its class defines them) take part
            in the step's ``session.run``. False: it adds nothing to any step.
        step_hook (bool): its ``trigger_step`` (when its class defines it) is called after each
            step. False: it does no per-step work.

    A callback's class-level default, :data:`EVERY_EPOCH`, keeps every hook its class defines.
    A callback whose schedule depends on what it finds in the graph sets it in ``setup_graph``.

    Example:
        >>> Schedule(every_k_steps=100).every_k_steps
        100
        >>> PeriodicTrigger(ModelSaver(), every_k_steps=500).when
        Schedule(every_k_steps=500, ...)
    """

    every_k_steps: int | None = None
    every_k_epochs: int | None = None
    every_k_seconds: float | None = None
    before_train: bool = False
    step_points: tuple[int, ...] = ()
    fetches: bool = True
    step_hook: bool = True

    def __post_init__(self) -> None:
        for name in ("every_k_steps", "every_k_epochs", "every_k_seconds"):
            _period(getattr(self, name), name)

    @property
    def at_steps(self) -> bool:
        """Whether its ``trigger()`` runs at some steps (every k steps or k seconds)."""
        return self.every_k_steps is not None or self.every_k_seconds is not None

    def replace(self, **changes: object) -> Schedule:
        """A copy with ``changes`` (field names as keywords)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


# Every hook the class defines, trigger() after each epoch: a callback that states nothing.
EVERY_EPOCH = Schedule()
