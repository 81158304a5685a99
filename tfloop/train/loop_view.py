"""The trainer's answers about where the run is and how it ends, read from its ``TrainLoop``."""
from __future__ import annotations

from tfloop.train.loop import TrainLoop

__all__ = ["LoopView"]


class LoopView:
    """What :class:`~tfloop.train.base.Trainer` answers from its loop (``self.loop``): the
    position, the stop request and the outcome, as callbacks see them (``TrainerView``).

    Example:
        >>> trainer.epoch_num, trainer.global_step, trainer.stop_requested
        (1, 0, False)
    """

    loop: TrainLoop

    # ---- the position ---------------------------------------------------------------------------
    @property
    def epoch_num(self) -> int:
        return self.loop.epoch_num

    @property
    def global_step(self) -> int:
        return self.loop.global_step

    @property
    def local_step(self) -> int:
        return self.loop.local_step

    @property
    def training_error(self) -> BaseException | None:
        return self.loop.training_error

    @property
    def stop_reason(self) -> str | None:
        return self.loop.stop_reason

    @property
    def steps_per_run(self) -> int:
        """Training steps per session call (1 unless the trainer loops in the graph)."""
        return self.loop.steps_per_run

    @property
    def stop_requested(self) -> bool:
        """Whether a stop was requested (:meth:`request_stop`); the main loop stops after the
        step in flight."""
        return self.loop.stop_requested

    def request_stop(self, reason: str) -> None:
        """Stop training after the step in flight, as if a callback raised ``StopTraining``."""
        self.loop.request_stop(reason)

    @property
    def steps_per_epoch(self) -> int:
        return self.loop.steps_per_epoch

    @property
    def starting_epoch(self) -> int:
        return self.loop.starting_epoch

    @property
    def max_epoch(self) -> int:
        return self.loop.max_epoch
