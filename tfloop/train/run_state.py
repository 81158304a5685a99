"""The run's state, owned by the trainer: the checkpoints it hands to whoever records a resume
state beside them, and continuing the run of a checkpoint (position, input, callbacks)."""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tfloop.resume.restore import read_run_state
from tfloop.train.loop import TrainLoop
from tfloop.utils import logger
from tfloop.utils.fs import display_path

__all__ = ["RunStateOwner"]


class RunStateOwner:
    """What :class:`~tfloop.train.base.Trainer` does with the run's state.

    Saving: whoever saves a checkpoint calls :meth:`checkpoint_saved`; the trainer hands it to
    its ``checkpoint_listeners`` (e.g. ``ResumeStateSaver``) once the trigger round is over, at
    points of its own loop, so the callbacks' order does not matter.
    Resuming: :meth:`continue_run_of` reads a checkpoint's run state once and puts the loop at its
    position (``TrainLoop.load_state_dict``); ``Trainer.initialize`` gives the input and the
    callbacks their states right after the session init.

    Example:
        >>> trainer.train_with_defaults(callbacks=[ModelSaver(), ResumeStateSaver(data)],
        ...                             max_epoch=4, resume_from="train_log/run/model-6")
    """

    loop: TrainLoop

    def _init_run_state(self) -> None:
        # Called with each checkpoint's prefix once the trigger round that saved it is over.
        self.checkpoint_listeners: list[Callable[[str], None]] = []
        self._unannounced: list[str] = []
        self._writes: dict[str, Any] = {}    # prefix -> PendingWrite of a background write
        # (checkpoint prefix, its run state, whether the input's saved position fits this run)
        self._resume: tuple[str, dict[str, Any], bool] | None = None

    def checkpoint_saved(self, prefix: str, pending: Any = None) -> None:
        """Called by whoever saved checkpoint ``prefix`` (``ModelSaver``, the signal handler):
        :attr:`checkpoint_listeners` get it once the trigger round that saved it is over (before
        the next session run; when the loop ends, before any ``after_train``; or when
        :meth:`announce_checkpoints` is called), so that what they
        record with it includes what every callback did in that round. ``pending``: the
        :class:`~tfloop.callbacks.background_write.PendingWrite` of its files when they are still
        being written (see :meth:`when_checkpoint_written`)."""
        self._unannounced.append(prefix)
        self._writes = {p: w for p, w in self._writes.items() if not w.done}
        if pending is not None:
            self._writes[prefix] = pending

    def when_checkpoint_written(self, prefix: str, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once the files of checkpoint ``prefix`` (just announced) are complete:
        now, or in the thread writing them; never when that write failed. For listeners that
        record something beside the checkpoint."""
        pending = self._writes.get(prefix)
        if pending is None:
            fn()
        else:
            pending.then(fn)

    def wait_for_checkpoint(self, prefix: str) -> bool:
        """Wait until the files of checkpoint ``prefix`` and what waited for them (its resume
        state) are written; whether they all were (False: its background write failed)."""
        pending = self._writes.get(prefix)
        if pending is None:
            return True
        pending.wait()
        return pending.error is None

    def announce_checkpoints(self) -> None:
        """Give every checkpoint saved since the last call to each of
        :attr:`checkpoint_listeners`, in the order they were saved."""
        prefixes, self._unannounced = self._unannounced, []
        for prefix in prefixes:
            for listener in self.checkpoint_listeners:
                listener(prefix)

    def loop_state(self) -> dict[str, Any]:
        """Where a run resumed from a checkpoint saved now continues (see
        :meth:`TrainLoop.state_dict`)."""
        return self.loop.state_dict()

    def continue_run_of(self, prefix: str) -> bool:
        """Continue the run of checkpoint ``prefix``: read its run state once and put the loop at
        its position (:meth:`TrainLoop.load_state_dict`, which also decides whether that run
        already finished); :meth:`initialize` gives the input and the callbacks their states
        right after the session init. Returns False (and logs it) when there is nothing left to
        train. Called by :meth:`train` with ``resume_from``, after the loop's bounds are set.
        """
        state, source = read_run_state(prefix)
        self._resume = (prefix, state, self.loop.load_state_dict(state, source))
        finished, max_epoch = self.loop.finished_epoch, self.loop.max_epoch
        if finished is not None:
            where = f"{finished} of {finished}" if finished == max_epoch else \
                f"{finished}, past max_epoch={max_epoch}"
            logger.info(f"{display_path(os.path.dirname(prefix))}: already finished at epoch "
                        f"{where}; raise max_epoch to train further.")
            return False
        logger.info(f"Resuming from {prefix}: epoch {self.loop.starting_epoch}, step "
                    f"{self.loop.starting_local_step} of the epoch, global step "
                    f"{state['global_step']}.")
        return True
