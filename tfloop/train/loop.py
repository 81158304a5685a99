"""The training loop: its position (which epoch and step, where it starts and ends), the stop
request, and the outcome; the position as a resume state (:meth:`TrainLoop.state_dict`)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tfloop.utils import logger
from tfloop.utils.checks import is_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["TrainLoop"]


class TrainLoop:
    """Where training is: epoch, step in the epoch, global step, and the loop's bounds.

    ``epoch_num`` is ``starting_epoch - 1`` before the first epoch; ``local_step`` counts from 0 in
    each epoch; ``global_step`` counts every training step ever run (it continues on resume).
    ``starting_local_step`` is the step the first epoch starts at (a run resumed mid-epoch sets it
    before the main loop; ``steps_per_epoch`` means only that epoch's end is left).
    ``epoch_first_global_step`` is the global step at the start of the current epoch's step 0
    (for an epoch resumed mid-way, where it would have been), so the steps of the epoch that have
    finished are ``global_step - epoch_first_global_step``, even when a hook raised mid-step.
    With ``steps_per_epoch=None`` each epoch is one pass over data of unknown length
    (:attr:`passes`): its steps run until the trainer learns, from the step that took the pass's
    last batch, that the pass ended (:meth:`end_pass`), and ``steps_per_epoch`` is then the
    length of the last pass that ended (None before the first one did).
    ``running_steps`` is True from an epoch's first session run until its last one finished, and
    stays True when an error leaves the steps: it tells an error raised by a step apart.
    ``training_error`` is the error that ended training, set by
    :class:`~tfloop.train.error_policy.TrainingErrorPolicy` before ``after_train`` runs (None
    while training runs and after a clean end). ``stop_reason`` says why a stop was requested
    (:meth:`request_stop`: a signal, a callback's ``ctx.request_stop()``); the main loop stops
    after the step in flight. ``finished_epoch`` is set by :meth:`load_state_dict` when the
    position it continues at is past ``max_epoch``: that run already finished.

    The trainer walks the loop with :meth:`epochs` and :meth:`runs_of_epoch`, which move
    ``epoch_num`` and ``local_step``; ``global_step`` is moved by :meth:`count_run`, which the
    step counter callback calls after every session run that carries the callbacks: only the
    first such run of each training step counts (a callback's own ``hooked_sess.run`` does not).

    Example:
        >>> loop = TrainLoop()
        >>> loop.configure(steps_per_epoch=4, starting_epoch=1, max_epoch=2)
        >>> loop.steps_per_run = 2
        >>> [(epoch, list(loop.runs_of_epoch())) for epoch in loop.epochs()]
        [(1, [1, 3]), (2, [1, 3])]
    """

    def __init__(self) -> None:
        self.starting_epoch = 1
        self.max_epoch = 1
        self._steps_per_epoch: int | None = 1
        self.passes = False
        self.pass_steps: int | None = None
        self._pass_ended = self._resumed_pass_ended = False
        self._steps_into_pass = 0
        self.steps_per_run = 1
        self.epoch_num = 0
        self.local_step = -1
        self.global_step = 0
        self.starting_local_step = 0
        self.epoch_first_global_step = 0
        self.running_steps = False
        self._run_uncounted = False
        self._epoch_ended = False
        self.training_error: BaseException | None = None
        self.stop_reason: str | None = None
        self.finished_epoch: int | None = None
        self._configured = False

    def configure(self, steps_per_epoch: int | None, starting_epoch: int, max_epoch: int) -> None:
        """Check (see :meth:`check_bounds`) and set the loop's bounds; ``steps_per_epoch=None``
        makes each epoch one pass over the data (:attr:`passes`)."""
        self._steps_per_epoch, self.starting_epoch, self.max_epoch = self.check_bounds(
            steps_per_epoch, starting_epoch, max_epoch)
        self.passes = self._steps_per_epoch is None
        self.epoch_num = self.starting_epoch - 1
        self._configured = True

    def check_bounds(self, steps_per_epoch: int | None, starting_epoch: int,
                     max_epoch: int) -> tuple[int | None, int, int]:
        """Return the loop's bounds as ints, or raise an error that names the bad value and what
        is valid: ints, ``steps_per_epoch`` positive and a multiple of ``steps_per_run`` (or None,
        for epochs that are passes, which need ``steps_per_run=1``),
        ``1 <= starting_epoch <= max_epoch``. Each bound is first converted as tensorpack's
        ``int()`` did (``2.0`` and ``'2'`` are 2; ``2.5`` is 2, with a warning)."""
        if steps_per_epoch is None and self.steps_per_run > 1:
            raise ValueError(
                f"steps_per_run={self.steps_per_run} needs epochs of a known length, but without "
                "steps_per_epoch each epoch is one pass over data of unknown length, which ends "
                "at a step learnt only once it ran. Give steps_per_epoch (a multiple of "
                f"{self.steps_per_run}; the data is repeated), or use steps_per_run=1.")
        # None (epochs that are passes) for steps_per_epoch only; numpy integers are ints too.
        steps = None if steps_per_epoch is None else self._as_int("steps_per_epoch",
                                                                  steps_per_epoch)
        starting_epoch = self._as_int("starting_epoch", starting_epoch)
        max_epoch = self._as_int("max_epoch", max_epoch)
        if steps is not None:
            self._check_steps_per_epoch(steps)
        if starting_epoch < 1:
            raise ValueError(f"starting_epoch must be >= 1, got {starting_epoch}.")
        if max_epoch < starting_epoch:
            raise ValueError(f"max_epoch ({max_epoch}) must be >= starting_epoch "
                             f"({starting_epoch}).")
        return steps, starting_epoch, max_epoch

    @staticmethod
    def _as_int(name: str, value: Any) -> int:
        value = tensorpack_int(value, name)
        if not is_int(value):
            raise TypeError(f"{name} must be an int, got {value!r}.")
        return int(value)

    def _check_steps_per_epoch(self, steps_per_epoch):
        if steps_per_epoch <= 0:
            raise ValueError(f"steps_per_epoch must be a positive int, got {steps_per_epoch}.")
        if steps_per_epoch % self.steps_per_run:
            raise ValueError(f"steps_per_epoch ({steps_per_epoch}) must be a multiple of "
                             f"steps_per_run ({self.steps_per_run}).")

    def epochs(self) -> Iterator[int]:
        """Yield each epoch number from ``starting_epoch`` to ``max_epoch``, once the loop is at
        that epoch's start: ``epoch_num`` set, ``local_step`` the last step already finished in it
        (-1, or ``starting_local_step - 1`` for the epoch a run resumes in).

        Raises:
            ValueError: ``starting_local_step`` is not a multiple of ``steps_per_run`` (raised when
                the first epoch is asked for, i.e. after ``before_train``).
        """
        self.running_steps = False
        finished = self.starting_local_step
        if finished % self.steps_per_run:
            raise ValueError(f"Cannot resume at step {finished} of the epoch with "
                             f"steps_per_run={self.steps_per_run}: it is not a multiple of it.")
        for epoch in range(self.starting_epoch, self.max_epoch + 1):
            self.epoch_num = epoch
            self.local_step = finished - 1
            self.epoch_first_global_step = self.global_step - finished
            self._epoch_ended = False
            self._pass_ended, self._resumed_pass_ended = self._resumed_pass_ended, False
            yield epoch
            finished, self._steps_into_pass = self._steps_into_pass, 0

    def end_epoch(self) -> None:
        """Mark the current epoch's end (its ``after_epoch`` done): a checkpoint saved from now
        on continues at the next epoch. An epoch that ended with its pass makes the pass's
        length ``steps_per_epoch``."""
        self._epoch_ended = True
        if self._pass_ended:
            self.pass_steps = self.local_step + 1

    @property
    def steps_per_epoch(self) -> int | None:
        """The steps of an epoch; when the epochs are passes, the length of the last pass that
        ended (:attr:`pass_steps`; None before the first one did)."""
        return self.pass_steps if self.passes else self._steps_per_epoch

    @property
    def known_steps_per_epoch(self) -> int:
        """The steps of an epoch. When the epochs are passes over data of unknown length (no
        ``steps_per_epoch`` was given), the length of the last pass that ended.

        Raises:
            ValueError: the epochs are passes and none has ended yet: the length is not known.
        """
        steps = self.steps_per_epoch
        if steps is None:
            raise ValueError(
                "steps_per_epoch is not known yet: each epoch is one pass over data of unknown "
                "length, and it is learnt when the first pass ends. Read "
                "trainer.expected_steps_per_epoch (None until then) where the length can be "
                "missing, or give steps_per_epoch=N to fix the epoch's length (the data is "
                "repeated).")
        return steps

    @property
    def epochs_are_passes(self) -> bool:
        """Whether each epoch is one pass over data of unknown length, ending where the data does
        (no ``steps_per_epoch`` was given and the data's size is not known)."""
        return self.passes

    def end_epoch_early(self) -> None:
        """Called by the trainer when a callback ended the epoch early (``StopEpoch``): when the
        epochs are passes, the next epoch is the rest of this one's pass, its steps counted on
        from where this one stopped."""
        if self.passes and not self._pass_ended:
            self._steps_into_pass = self.local_step + 1

    def end_pass(self) -> None:
        """Called by the trainer when the step in flight took the last batch of its pass: the
        epoch ends after it (epochs that are passes only)."""
        self._pass_ended = True

    @property
    def is_last_step(self) -> bool:
        """Whether the current step (``local_step``) is its epoch's last: the step
        ``steps_per_epoch - 1``, or, when the epochs are passes, the step that took the pass's
        last batch (known once it ran: from the trainer's ``after_run`` on)."""
        if self.passes:
            return self._pass_ended
        return self.local_step + 1 == self.steps_per_epoch

    def runs_of_epoch(self) -> Iterator[int]:
        """Yield the step of the current epoch that each session run ends at, with ``local_step``
        set to it: every step in turn, or every ``steps_per_run``-th one, from where the epoch
        starts (see :meth:`epochs`) to ``steps_per_epoch - 1``; when the epochs are passes, every
        step until the pass ended (:meth:`end_pass`)."""
        if self.passes or self.steps_per_epoch is None:
            return self._runs_of_pass()
        return self._runs_of_fixed_length(self.steps_per_epoch)

    def _runs_of_pass(self) -> Iterator[int]:
        self.running_steps = True
        step = self.local_step
        while not self._pass_ended:
            step += 1
            self.local_step = step
            self._run_uncounted = True
            try:
                yield step
            finally:
                self._run_uncounted = False
        self.running_steps = False

    def _runs_of_fixed_length(self, steps_per_epoch: int) -> Iterator[int]:
        self.running_steps = True
        for last_step in range(self.local_step + self.steps_per_run, steps_per_epoch,
                               self.steps_per_run):
            self.local_step = last_step
            self._run_uncounted = True
            try:
                yield last_step
            finally:
                self._run_uncounted = False
        self.running_steps = False

    def count_run(self) -> None:
        """Count a session run that carried the callbacks: the first one of a training step
        (inside :meth:`runs_of_epoch`) advances ``global_step`` by ``steps_per_run``; any other
        (a callback running the hooked session itself, in a trigger) counts nothing."""
        if self._run_uncounted:
            self._run_uncounted = False
            self.global_step += self.steps_per_run

    # ---- stopping ----------------------------------------------------------------------------
    def request_stop(self, reason: str) -> None:
        """Ask the main loop to stop after the step in flight (the first reason is kept)."""
        if self.stop_reason is None:
            self.stop_reason = reason

    @property
    def stop_requested(self) -> bool:
        """Whether a stop was requested (:meth:`request_stop`); the main loop stops after the
        step in flight."""
        return self.stop_reason is not None

    # ---- the position as a resume state --------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Where a run resumed from a checkpoint saved now continues: ``epoch``, ``local_step``
        (the next step to run in it; ``steps_per_epoch`` means only its end is left),
        ``global_step`` and ``steps_per_epoch`` (None when the epochs are passes; then also
        ``pass_steps``, the length of the last pass that ended, and ``pass_ended``, whether only
        the epoch's end is left).

        Once an epoch's ``after_epoch`` is done (:meth:`end_epoch`) that is the next epoch's
        start. Otherwise it is the step after the epoch's last finished one, counted from the
        global step, so that a hook raising during a step does not skip that step; before an
        epoch's first step (training ended in ``before_epoch``) that is its step 0.

        Example:
            >>> loop.state_dict()
            {'epoch': 2, 'local_step': 1, 'global_step': 4, 'steps_per_epoch': 3}
        """
        if self._epoch_ended:
            epoch, local_step = self.epoch_num + 1, self._steps_into_pass
        else:
            epoch, local_step = self.epoch_num, self.global_step - self.epoch_first_global_step
        state = {"epoch": epoch, "local_step": local_step, "global_step": self.global_step,
                 "steps_per_epoch": None if self.passes else self.steps_per_epoch}
        if self.passes:
            state["pass_steps"] = self.pass_steps
            state["pass_ended"] = self._pass_ended and not self._epoch_ended
        return state

    def load_state_dict(self, state: dict[str, Any], source: str = "the state") -> bool:
        """Continue where ``state`` says: set ``starting_epoch`` and ``starting_local_step``, and
        ``finished_epoch`` when that is past ``max_epoch`` (nothing is left to train).

        ``state`` is a :meth:`state_dict` (a resume state's position), or only ``global_step``
        (a checkpoint without a resume state). A configured loop continues at the state's epoch
        and step when it was saved with this loop's ``steps_per_epoch``; otherwise at the
        position of its global step (:meth:`position_of_step`), which is logged with ``source``
        (the file the state comes from). A loop not configured yet takes the position as it is.

        Returns:
            bool: whether the position is the one saved, i.e. the input's saved position fits.

        Example:
            >>> loop.configure(steps_per_epoch=3, starting_epoch=1, max_epoch=4)
            >>> loop.load_state_dict({"global_step": 7}, "train_log/model-7")
            False
            >>> loop.starting_epoch, loop.starting_local_step
            (3, 1)
        """
        saved_passes = "epoch" in state and state.get("steps_per_epoch", 0) is None
        if self._configured:
            passes, spe = self.passes, self.steps_per_epoch
        else:
            spe = state.get("steps_per_epoch", self.steps_per_epoch)
            passes = spe is None
        exact = "epoch" in state and saved_passes == passes and (
            passes or state.get("steps_per_epoch", spe) == spe)
        if exact:
            epoch, local_step = int(state["epoch"]), int(state["local_step"])
            if passes and self._configured:
                self.pass_steps = state.get("pass_steps")
                self._resumed_pass_ended = bool(state.get("pass_ended"))
        elif passes or spe is None:
            raise self._no_position_error(state, source)
        else:
            position = self.position_of_step(int(state["global_step"]), spe)
            epoch, local_step = position["epoch"], position["local_step"]
            self._say_where(state, source, epoch, local_step, saved_passes)
        self.starting_epoch, self.starting_local_step = epoch, local_step
        self.finished_epoch = epoch - 1 if self._configured and epoch > self.max_epoch else None
        return exact

    @staticmethod
    def _no_position_error(state, source):
        saved = "has no resume state" if "epoch" not in state else \
            f"was written with steps_per_epoch={state['steps_per_epoch']}"
        return ValueError(
            f"{source} {saved}, and this run's epochs are passes over data of unknown length: "
            f"where its global step {state['global_step']} falls in them cannot be told. Give "
            "steps_per_epoch to continue with epochs of that many steps, or resume from a "
            "checkpoint with a resume state written by a run without steps_per_epoch "
            "(AutoResumeTrainConfig writes them).")

    def _say_where(self, state, source, epoch, local_step, saved_passes):
        where = f"continuing at global step {state['global_step']} (epoch {epoch}, step " \
                f"{local_step})"
        if "epoch" in state:
            saved = "epochs that are passes over the data (no steps_per_epoch), this run has " \
                "steps_per_epoch=" if saved_passes else \
                f"steps_per_epoch={state['steps_per_epoch']}, this run has "
            logger.warning(f"{source} was written with {saved}{self.steps_per_epoch}: {where}; the "
                           "input restarts from its beginning.")
        elif local_step:
            logger.warning(f"{source} has no resume state: {where}, but the input restarts from "
                           "its beginning and the callbacks start afresh.")

    @staticmethod
    def position_of_step(global_step: int, steps_per_epoch: int) -> dict[str, int]:
        """The position after ``global_step`` steps of ``steps_per_epoch`` each, for a checkpoint
        without a resume state.

        Example:
            >>> TrainLoop.position_of_step(7, 3)
            {'epoch': 3, 'local_step': 1, 'global_step': 7, 'steps_per_epoch': 3}
        """
        return {"epoch": global_step // steps_per_epoch + 1,
                "local_step": global_step % steps_per_epoch, "global_step": global_step,
                "steps_per_epoch": steps_per_epoch}
