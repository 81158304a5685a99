"""The one place that saves a run's state beside its checkpoints: the loop's position, the
input's position and the callbacks' states (format: :mod:`tfloop.resume.state`). The trainer
restores it (:mod:`tfloop.resume.restore`)."""
import json
import os

from tfloop.callbacks.base import Callback
from tfloop.callbacks.model_saver import ModelSaver
from tfloop.compat import tf
from tfloop.input.base import UnsavedPosition
from tfloop.resume.state import (
    FORMAT_VERSION,
    ITERATOR_SUFFIX,
    RESUME_SUFFIX,
    collect_callback_states,
    resume_state_path,
)
from tfloop.tfutils.varmanip import checkpoint_step
from tfloop.utils import files, logger
from tfloop.utils.fs import atomic_write

__all__ = ["ResumeStateSaver"]


class ResumeStateSaver(Callback):
    """Save the resume state of every checkpoint (see the module doc).

    :class:`~tfloop.train.config.AutoResumeTrainConfig` adds it; add it yourself, anywhere in
    the list, to get the same files with a plain ``TrainConfig``. Saving: it is one of the
    trainer's ``checkpoint_listeners``, which ``ModelSaver`` and the signal handler notify; the
    trainer hands it each checkpoint once every callback finished the trigger in which it was
    saved (before the next step, or when the loop ends, before any ``after_train``), so the
    state holds what the callbacks did in that trigger too, whatever the callbacks' order. It
    also builds the input's save and restore ops (``setup_state``). Restoring is the
    trainer's: ``train(resume_from=)`` reads the state once and, right after the session init,
    gives the input and the callbacks theirs.

    Args:
        input_source: the training InputSource; a ``DatasetInput``'s iterator position is saved
            when its pipeline allows it (otherwise a resumed run restarts the input, said once);
            a ``QueueInput``'s or ``FeedInput``'s position is its feeder callback's state.

    Attributes:
        input_note (str): why the input position is not saved, or None.
        written (list[str]): the checkpoints whose resume state this run wrote.

    Example:
        >>> callbacks = [PeriodicTrigger(ModelSaver(), every_k_steps=100),
        ...              ResumeStateSaver(data)]
    """

    # Every worker restores its position through it; only the chief writes (where savers run).
    _chief_only = False

    def __init__(self, input_source=None):
        self._source = input_source
        self.input_note = None
        self._saves_input = False
        self.written = []

    # ---- saving ------------------------------------------------------------------------------
    def _setup_graph(self):
        note = UnsavedPosition(f"the input {self._source} has no saveable position") \
            if self._source is None else self._source.setup_state()
        self.trainer.checkpoint_listeners.append(self.save)
        if note is None:
            self._saves_input = True
            return
        self.input_note = note.reason
        if not note.inexact:
            logger.info(f"ResumeStateSaver: {note}; a resumed run restarts it from its beginning.")
        else:
            logger.warning(f"ResumeStateSaver: {note}, so a resumed run restarts the input from "
                           "its beginning: resuming is exact only for a stateless pipeline.")

    def _before_train(self):
        if not self.trainer.callbacks_of(ModelSaver) and self.trainer.is_chief:
            logger.warning("ResumeStateSaver: there is no ModelSaver, so only checkpoints saved on "
                           "a signal get a resume state.")

    def save(self, prefix):
        """The trainer's checkpoint listener: record the resume state of ``prefix``, saved in the
        trigger round that just ended, for the position the trainer's loop is at; it is written
        once the checkpoint's files are complete (``Trainer.when_checkpoint_written``)."""
        self.write(prefix, *self.position_after_training())

    def position_after_training(self):
        """Where a run resumed from a checkpoint saved now continues: ``(epoch, local_step)``,
        from the trainer's loop (:meth:`~tfloop.train.loop.TrainLoop.state_dict`)."""
        state = self.trainer.loop_state()
        return state["epoch"], state["local_step"]

    def write(self, prefix, epoch, local_step):
        """Write the resume state of checkpoint ``prefix`` for position ``(epoch, local_step)``:
        the state is taken now, its files are written once the checkpoint is complete."""
        if not self.trainer.is_chief:
            return
        step = checkpoint_step(prefix)
        if step is not None and step != self.global_step:
            logger.error(f"ResumeStateSaver: checkpoint {prefix} is from global step {step} but "
                         f"training is at step {self.global_step}; its resume state is not "
                         "written. Whoever saves a checkpoint calls trainer.checkpoint_saved("
                         "prefix) in the trigger round that saved it.")
            return
        loop = self.trainer.loop_state()
        state = {"format": FORMAT_VERSION, "checkpoint": os.path.basename(prefix),
                 "global_step": self.global_step, "epoch": epoch, "local_step": local_step,
                 "steps_per_epoch": loop["steps_per_epoch"],
                 "callbacks": collect_callback_states(self.trainer.callbacks),
                 "iterator": None, "input_note": self.input_note}
        # Epochs that are passes: the length learnt so far, and whether only the epoch's end is
        # left (the pass ended with the last step).
        state.update({key: loop[key] for key in ("pass_steps", "pass_ended") if key in loop})
        try:
            blob = self._source.state_dict(self.trainer.sess) if self._saves_input else None
        except tf.errors.OpError as e:
            self._log_failure(prefix, e)
            return
        if blob is not None:
            state["iterator"] = {"file": os.path.basename(prefix) + ITERATOR_SUFFIX,
                                 "bytes": len(blob)}
        text = json.dumps(state, indent=1, allow_nan=True)    # as it is now, not when written
        self.trainer.when_checkpoint_written(prefix,
                                             lambda: self._write_files(prefix, text, blob))

    def _write_files(self, prefix, text, blob):
        try:
            if blob is not None:
                atomic_write(prefix + ITERATOR_SUFFIX, blob)
            atomic_write(resume_state_path(prefix), text)
        except (OSError, tf.errors.OpError) as e:
            self._log_failure(prefix, e)
            return
        self.written.append(prefix)
        self._remove_orphans(files.dirname(prefix))

    @staticmethod
    def _log_failure(prefix, e):
        logger.error(f"ResumeStateSaver could not write the resume state of {prefix}: "
                     f"{type(e).__name__}: {e}. A resumed run will start from an earlier "
                     "checkpoint.")

    @staticmethod
    def _remove_orphans(directory):
        """Remove resume states whose checkpoint was deleted (e.g. by ``max_to_keep``), and
        temporary files of writes that a killed process left behind."""
        for name in files.listdir(directory):
            if name.startswith("."):
                stale = name.endswith(".tmp") and (RESUME_SUFFIX + "." in name or
                                                   ITERATOR_SUFFIX + "." in name)
            else:
                suffix = next((s for s in (RESUME_SUFFIX, ITERATOR_SUFFIX) if name.endswith(s)),
                              None)
                stale = suffix is not None and not files.exists(
                    files.join(directory, name[:-len(suffix)] + ".index"))
            if stale:
                try:
                    files.remove(files.join(directory, name))
                except OSError as e:
                    logger.warning(f"ResumeStateSaver: could not remove the stale {name}: {e}.")
