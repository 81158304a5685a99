"""What a callback may see of the trainer: :class:`TrainerView`, declared where callbacks live.

Callbacks, monitors, input sources and ``resume/`` sit below ``train/`` and never import it; they
get the trainer in ``setup_graph`` and use only what this protocol lists. mypy checks both sides:
``train/base.py`` assigns a ``Trainer`` to a ``TrainerView`` (so every trainer has all of it),
and the modules that use ``self.trainer`` are type-checked against it (``mypy.ini``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

__all__ = ["TrainerView", "StepCounter", "expects_last_step"]

_C = TypeVar("_C")


class TrainerView(Protocol):
    """The trainer as callbacks see it (``Callback.trainer``).

    Example:
        >>> class LogLoss(Callback):
        ...     def _trigger_epoch(self):
        ...         trainer: TrainerView = self.trainer
        ...         print(trainer.epoch_num, trainer.monitors.get_latest("cost"))
    """

    # ---- what the run is made of ---------------------------------------------------------------
    @property
    def graph(self) -> Any:
        """The trainer's ``tf.Graph``."""

    @property
    def sess(self) -> Any:
        """The raw session (from ``initialize`` on)."""

    @property
    def hooked_sess(self) -> Any:
        """The session whose ``run`` carries the callbacks' fetches (from ``initialize`` on)."""

    @property
    def monitors(self) -> Any:
        """The ``Monitors`` dispatcher (from ``setup_callbacks`` on)."""

    @property
    def callbacks(self) -> list[Any]:
        """Every callback, in the order they are called."""

    def callbacks_of(self, kind: type[_C]) -> list[_C]:
        """The callbacks that are a ``kind`` (an ``isinstance`` class), those inside wrappers
        and groups too, in the order they are called."""

    @property
    def model(self) -> Any:
        """The ``ModelDesc`` being trained, or None."""

    @property
    def towers(self) -> Any:
        """The towers built so far (``TowerTensorHandles``), or None for a trainer without
        towers."""

    @property
    def tower_func(self) -> Any:
        """The model's ``TowerFunc``, or None for a trainer without towers."""

    @property
    def logdir(self) -> str | None:
        """The run's log directory, or None."""

    @property
    def is_chief(self) -> bool:
        """Whether this process is the chief worker."""

    # ---- where the run is -----------------------------------------------------------------------
    @property
    def epoch_num(self) -> int: ...

    @property
    def global_step(self) -> int: ...

    @property
    def local_step(self) -> int: ...

    @property
    def starting_epoch(self) -> int: ...

    @property
    def steps_per_epoch(self) -> int:
        """The steps of an epoch; when the epochs are passes over data of unknown length, the
        last pass's, and a ValueError before the first pass ended."""

    @property
    def expected_steps_per_epoch(self) -> int | None:
        """``steps_per_epoch``, or None while it is not known."""

    @property
    def epochs_are_passes(self) -> bool:
        """Whether each epoch is one pass over data of unknown length."""

    @property
    def is_last_step(self) -> bool:
        """Whether the current step is its epoch's last (for passes: from the step's
        ``after_run`` on)."""

    @property
    def max_epoch(self) -> int: ...

    @property
    def steps_per_run(self) -> int: ...

    # ---- how it ends -----------------------------------------------------------------------
    @property
    def training_error(self) -> BaseException | None: ...

    @property
    def stop_reason(self) -> str | None: ...

    @property
    def stop_requested(self) -> bool: ...

    def request_stop(self, reason: str) -> None: ...

    @property
    def epoch_end_listeners(self) -> list[Callable[[], None]]:
        """Called once every callback's ``trigger_epoch`` of an epoch ran; a stop one requests
        ends training after that epoch."""

    @property
    def loop_end_listeners(self) -> list[Callable[[], None]]:
        """Called when the main loop ended cleanly, before any ``after_train``."""

    # ---- checkpoints and the run's state -------------------------------------------------------
    @property
    def checkpoint_listeners(self) -> list[Callable[[str], None]]: ...

    def checkpoint_saved(self, prefix: str, pending: Any = None) -> None: ...

    def when_checkpoint_written(self, prefix: str, fn: Callable[[], None]) -> None: ...

    def wait_for_checkpoint(self, prefix: str) -> bool: ...

    def announce_checkpoints(self) -> None: ...

    def loop_state(self) -> dict[str, Any]: ...


class StepCounter(Protocol):
    """What the step counter callback (``MaintainStepCounter``) is handed: the loop's count of
    training steps, set before training and advanced after each step's session run."""

    global_step: int

    def count_run(self) -> None: ...


def expects_last_step(trainer: TrainerView) -> bool:
    """Whether the step about to run (``trainer.local_step``, in ``before_run``) is expected to be
    its epoch's last, for work fetched with that step: the step ``steps_per_epoch - 1``. When the
    epochs are passes over data of unknown length, the last pass's length says which (a pass may
    turn out shorter or longer), and in the first pass, whose length is not known, its first step
    (so that every epoch has one).

    Example:
        >>> def _before_run(self, ctx):
        ...     return self._summary if expects_last_step(self.trainer) else None
    """
    steps = trainer.expected_steps_per_epoch
    return trainer.local_step == (0 if steps is None else steps - 1)
