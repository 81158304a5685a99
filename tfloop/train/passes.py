"""Epochs that are passes over data of unknown length, on the trainer's side: the step that takes
the last batch of a pass ends the epoch, on every tower and every worker at once.

The input source marks where its passes end (``InputSource.pass_end_flags``, one flag per tower;
see :mod:`tfloop.input.passes`). :class:`PassEndWatch` fetches whether the pass ended with each
step and tells the loop (``TrainLoop.end_pass``) in its ``after_run``, which runs before every
other callback's: their ``after_run`` and ``trigger_step`` see ``trainer.is_last_step``. No step
fails at the end of the data, so no step is half done and every callback sees whole steps.

In a cluster each worker reads a shard of its own: the flags of all workers are combined in the
step (the trainer's ``pass_end_tensors``), so every worker ends the epoch after the same step,
the one that took the last batch of the shortest shard's pass; the workers whose pass was not
over read and drop the rest of it (``InputSource.skip_to_next_pass``), so every epoch is a new
pass on every worker.
"""
from typing import Any

from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.train.loop import TrainLoop
from tfloop.utils import logger

__all__ = ["PassEndWatch", "check_epochs_are_passes", "any_pass_ended", "log_epochs_are_passes",
           "configure_watched_loop"]


def any_pass_ended(flags):
    """Whether any of the towers' ``flags`` (bool scalars) is true, as a bool scalar tensor."""
    return flags[0] if len(flags) == 1 else tf.reduce_any(tf.stack(flags))


def check_epochs_are_passes(source):
    """Check that each epoch can be one pass over ``source``'s data: it says where its passes end.

    Raises:
        ValueError: ``source`` is empty, repeats forever, or cannot tell where a pass ends; the
            message says how to set the epoch's length.
    """
    described = source.describe_pipeline() if source is not None else None
    pipeline = f" (its pipeline: {described})" if described else ""
    if source is not None and source.is_empty():
        raise ValueError(f"The input {source} is an empty dataset: it has no elements to train "
                         "on. Check what builds it (a take(0), a filter that drops everything, an "
                         "empty file list).")
    if source is not None and source.is_infinite():
        raise ValueError(
            f"The input {source} repeats forever{pipeline}, so an epoch cannot be one pass over "
            "it: set the epoch's length with steps_per_epoch=N, or remove the .repeat() to make "
            "each epoch one pass over the data (tfloop repeats it).")
    if source is None or not source.marks_pass_ends():
        raise ValueError(
            f"steps_per_epoch is required: the input source {source} does not know its size "
            "and cannot tell where a pass over its data ends (e.g. an endless stream). Give "
            "steps_per_epoch=N.")


class PassEndWatch(Callback):
    """Fetch, with every step, whether it took the last batch of a pass, and end the epoch after
    it. The trainer adds it right after the step counter when the epochs are passes.

    Args:
        loop (TrainLoop): the trainer's loop, told with ``end_pass()``.
        source (InputSource): the input that marks where its passes end.
        pass_end_tensors (callable): ``fn(flags) -> (ended, own)``: from the towers' flags, a
            bool scalar that is true when the epoch ends after this step (on every worker), and
            one that is true when this worker's own pass ended (None on one machine, where the
            two are the same).

    Example:
        >>> PassEndWatch(trainer.loop, source, lambda flags: (any_pass_ended(flags), None))
    """

    _chief_only = False

    def __init__(self, loop: TrainLoop, source, pass_end_tensors):
        self._loop = loop
        self._source = source
        self._pass_end_tensors = pass_end_tensors
        self._fetches = None
        self._skips = False

    def _setup_graph(self):
        source = self._source
        flags = source.pass_end_flags()
        if len(flags) != source.batches_per_step:
            raise ValueError(
                f"{type(self.trainer).__name__} takes {len(flags)} batch(es) per step from "
                f"{source}, which was set up for {source.batches_per_step} (one per tower): a "
                "step could take batches of two passes. Set the input up with "
                f"setup(signature, batches_per_step={len(flags)}) (TowerTrainer does it with its "
                "batches_per_step).")
        ended, own = self._pass_end_tensors(flags)
        self._skips = own is not None
        self._fetches = tfv1.train.SessionRunArgs(
            fetches=[ended, own] if self._skips else [ended])

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        results = values.results
        if results[0]:
            if self._skips and not results[1]:
                self._source.skip_to_next_pass(self.trainer.sess)
            self._loop.end_pass()

    def __str__(self):
        return f"PassEndWatch[{self._source}]"


def log_epochs_are_passes(source: Any) -> None:
    """Log that each epoch is one pass over ``source`` (an endless iterator that does not say so
    never ends its first one)."""
    described = source.describe_pipeline()
    pipeline = f" (its pipeline: {described})" if described else ""
    logger.info(f"The input {source}{pipeline} does not know its length: each epoch is one "
                "pass over it, ending where the pass does (an endless one never ends its "
                "first epoch: give steps_per_epoch for it).")


def configure_watched_loop(loop: TrainLoop, callbacks: Any, steps_per_epoch: int | None,
                           starting_epoch: int, max_epoch: int) -> None:
    """Set the loop's bounds (``steps_per_epoch=None``: epochs that are passes) and check that
    such epochs end: through the :class:`PassEndWatch` among ``callbacks`` that
    ``Trainer.setup_callbacks`` adds when the loop was configured for them before it (as
    ``Trainer.train`` does)."""
    loop.configure(steps_per_epoch, starting_epoch, max_epoch)
    if loop.passes and not any(isinstance(cb, PassEndWatch) for cb in callbacks):
        raise ValueError(
            "main_loop(steps_per_epoch=None) makes each epoch one pass over the data, but the "
            "callbacks were set up for epochs of a fixed length, so no step would end one: "
            "call trainer.train(..., steps_per_epoch=None) (or train_with_defaults), which "
            "sets the loop up before the callbacks, or give main_loop a steps_per_epoch.")
