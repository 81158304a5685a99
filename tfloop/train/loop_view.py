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
        """The steps of an epoch. When the epochs are passes over data of unknown length (no
        ``steps_per_epoch`` was given), the length of the last pass that ended.

        Raises:
            ValueError: the epochs are passes and none has ended yet: the length is not known.
        """
        steps = self.loop.steps_per_epoch
        if steps is None:
            raise ValueError(
                "steps_per_epoch is not known yet: each epoch is one pass over data of unknown "
                "length, and it is learnt when the first pass ends. Read "
                "trainer.expected_steps_per_epoch (None until then) where the length can be "
                "missing, or give steps_per_epoch=N to fix the epoch's length (the data is "
                "repeated).")
        return steps

    @property
    def expected_steps_per_epoch(self) -> int | None:
        """:attr:`steps_per_epoch`, or None while it is not known (the first pass over data of
        unknown length). When the epochs are passes, a pass may turn out longer or shorter."""
        return self.loop.steps_per_epoch

    @property
    def epochs_are_passes(self) -> bool:
        """Whether each epoch is one pass over data of unknown length, ending where the data does
        (no ``steps_per_epoch`` was given and the data's size is not known)."""
        return self.loop.passes

    @property
    def is_last_step(self) -> bool:
        """Whether the current step is its epoch's last (see :attr:`TrainLoop.is_last_step`: when
        the epochs are passes, known from the step's ``after_run`` on)."""
        return self.loop.is_last_step

    @property
    def starting_epoch(self) -> int:
        return self.loop.starting_epoch

    @property
    def max_epoch(self) -> int:
        return self.loop.max_epoch
