"""The run's state, two parts of the trainer: the checkpoints it saved, on their way to whoever
records a resume state beside them (:class:`SavedCheckpoints`), and the run a checkpoint
continues (:class:`RunResume`: position, input, callbacks)."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tfloop.resume.restore import read_run_state, restore_run_state
from tfloop.train.loop import TrainLoop
from tfloop.utils import logger
from tfloop.utils.fs import display_path

__all__ = ["SavedCheckpoints", "RunResume"]


class SavedCheckpoints:
    """The trainer's part that hands each saved checkpoint to its :attr:`listeners` (e.g. the
    writer of resume states) once the trigger round that saved it is over, at points of the
    trainer's own loop, so the callbacks' order does not matter. The trainer's
    ``checkpoint_saved``, ``checkpoint_listeners``, ``announce_checkpoints``,
    ``when_checkpoint_written`` and ``wait_for_checkpoint`` are this part's.

    Example:
        >>> trainer.checkpoint_listeners.append(lambda prefix: print("saved", prefix))
        >>> trainer.checkpoint_saved("train_log/run/model-6")  # what ModelSaver calls
        >>> trainer.announce_checkpoints()
        saved train_log/run/model-6
    """

    def __init__(self) -> None:
        # Called with each checkpoint's prefix once the trigger round that saved it is over.
        self.listeners: list[Callable[[str], None]] = []
        self.unannounced: list[str] = []
        self._writes: dict[str, Any] = {}    # prefix -> PendingWrite of a background write

    def saved(self, prefix: str, pending: Any = None) -> None:
        """Called by whoever saved checkpoint ``prefix`` (``ModelSaver``, the signal handler):
        the listeners get it once the trigger round that saved it is over (before the next
        session run; when the loop ends, before any ``after_train``; or when :meth:`announce`
        is called), so that what they record with it includes what every callback did in that
        round. ``pending``: the :class:`~tfloop.callbacks.background_write.PendingWrite` of its
        files when they are still being written (see :meth:`when_written`)."""
        self.unannounced.append(prefix)
        self._writes = {p: w for p, w in self._writes.items() if not w.done}
        if pending is not None:
            self._writes[prefix] = pending

    def when_written(self, prefix: str, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once the files of checkpoint ``prefix`` (just announced) are complete:
        now, or in the thread writing them; never when that write failed. For listeners that
        record something beside the checkpoint."""
        pending = self._writes.get(prefix)
        if pending is None:
            fn()
        else:
            pending.then(fn)

    def wait_for(self, prefix: str) -> bool:
        """Wait until the files of checkpoint ``prefix`` and what waited for them (its resume
        state) are written; whether they all were (False: its background write failed)."""
        pending = self._writes.get(prefix)
        if pending is None:
            return True
        pending.wait()
        return pending.error is None

    def announce(self) -> None:
        """Give every checkpoint saved since the last call to each of the :attr:`listeners`, in
        the order they were saved."""
        prefixes, self.unannounced = self.unannounced, []
        for prefix in prefixes:
            for listener in self.listeners:
                listener(prefix)


class RunResume:
    """The trainer's part that continues the run of a checkpoint: :meth:`continue_run_of` reads
    its run state once and puts the loop at its position (``TrainLoop.load_state_dict``);
    :meth:`restore` gives the input and the callbacks their states right after the session init.
    The trainer's ``continue_run_of`` is this part's.

    Example:
        >>> trainer.train_with_defaults(callbacks=[ModelSaver()], max_epoch=4,
        ...                             resume_from="train_log/run/model-6")
    """

    def __init__(self, loop: TrainLoop) -> None:
        self._loop = loop
        # (checkpoint prefix, its run state, whether the input's saved position fits this run)
        self._resumed: tuple[str, dict[str, Any], bool] | None = None

    @property
    def global_step(self) -> int:
        """The global step the run continues at (0 when it continues no checkpoint)."""
        return 0 if self._resumed is None else int(self._resumed[1]["global_step"])

    def continue_run_of(self, prefix: str) -> bool:
        """Continue the run of checkpoint ``prefix``: read its run state once and put the loop at
        its position (:meth:`TrainLoop.load_state_dict`, which also decides whether that run
        already finished); the trainer's ``initialize`` gives the input and the callbacks their
        states right after the session init. Returns False (and logs it) when there is nothing
        left to train. Called by ``Trainer.train`` with ``resume_from``, after the loop's bounds
        are set.
        """
        loop = self._loop
        state, source = read_run_state(prefix)
        self._resumed = (prefix, state, loop.load_state_dict(state, source))
        finished, max_epoch = loop.finished_epoch, loop.max_epoch
        if finished is not None:
            where = f"{finished} of {finished}" if finished == max_epoch else \
                f"{finished}, past max_epoch={max_epoch}"
            logger.info(f"{display_path(os.path.dirname(prefix))}: already finished at epoch "
                        f"{where}; raise max_epoch to train further.")
            return False
        logger.info(f"Resuming from {prefix}: epoch {loop.starting_epoch}, step "
                    f"{loop.starting_local_step} of the epoch, global step "
                    f"{state['global_step']}.")
        return True

    def restore(self, sess: Any, input_source: Any, callbacks: list[Any]) -> None:
        """Give the input and the callbacks the states of the checkpoint the run continues
        (nothing when it continues none), right after the session init restored its
        variables."""
        if self._resumed is not None:
            restore_run_state(sess, input_source, callbacks, *self._resumed)
