"""The callback that writes a resume state next to every checkpoint (format: :mod:`tfloop.resume.state`)."""
import json
import os

from tfloop.callbacks.base import Callback
from tfloop.callbacks.saver import ModelSaver
from tfloop.compat import tf
from tfloop.resume.state import (
    FORMAT_VERSION,
    ITERATOR_SUFFIX,
    RESUME_SUFFIX,
    IteratorState,
    collect_callback_states,
    resume_state_path,
)
from tfloop.tfutils.varmanip import checkpoint_step
from tfloop.utils import logger
from tfloop.utils.fs import atomic_write

__all__ = ["ResumeStateSaver"]


class ResumeStateSaver(Callback):
    """Write the resume state of every checkpoint a :class:`ModelSaver` writes (see the module doc).

    :class:`~tfloop.train.config.AutoResumeTrainConfig` adds it; add it yourself after your
    ModelSavers to get the same files with a plain ``TrainConfig``. The state of a checkpoint is
    written once every callback finished the trigger in which it was saved (at the next step, or at
    the end of training), so it holds what the callbacks did in that trigger too.

    Args:
        input_source: the training InputSource; a ``DatasetInput``'s iterator position is saved
            when its pipeline allows it (otherwise a resumed run restarts the input, said once);
            a ``QueueInput``'s or ``FeedInput``'s position is its feeder callback's state.

    Attributes:
        iterator_state (IteratorState): saves the input position, or None when it cannot.
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
        self.iterator_state = None
        self.input_note = None
        self._savers = []
        self._seen = ()
        self._ended_epoch = None
        self.written = []

    def _setup_graph(self):
        if getattr(self._source, "position_in_callback_state", False):
            # QueueInput, FeedInput: their callback's state_dict() holds the position.
            return
        iterator = getattr(self._source, "iterator", None)
        if iterator is None:
            self.input_note = f"the input {self._source} has no saveable position"
            logger.info(f"ResumeStateSaver: {self.input_note}; a resumed run restarts it from its beginning."
                        )
            return
        state = IteratorState(iterator)
        if not state.savable:
            self.input_note = f"the input pipeline cannot be saved ({state.reason})"
            logger.warning(f"ResumeStateSaver: {self.input_note}, so a resumed run restarts the input from its "
                           "beginning: resuming is exact only for a stateless pipeline.")
            return
        state.build_save()
        self.iterator_state = state

    def _before_train(self):
        self._savers = [inner for cb in self.trainer.callbacks for inner in cb.walk()
                        if isinstance(inner, ModelSaver)]
        if not self._savers and self.trainer.is_chief:
            logger.warning("ResumeStateSaver: there is no ModelSaver, so only checkpoints saved on "
                           "a signal get a resume state.")
        self._seen = self._latest()

    def _latest(self):
        return tuple(ms.last_checkpoint for ms in self._savers)

    def _after_epoch(self):
        self._ended_epoch = self.epoch_num

    def _before_run(self, ctx):
        if self._latest() != self._seen:
            # local_step is the last step of the run about to start (steps_per_run may be > 1).
            self._write_new(self.epoch_num, self.local_step - self.trainer.loop.steps_per_run + 1)

    def _after_train(self):
        if self._latest() != self._seen:
            self._write_new(*self.position_after_training())

    def position_after_training(self):
        """Where a run resumed from a checkpoint saved now continues: ``(epoch, local_step)``.

        The epoch counter moves on before ``before_epoch``; when training ended there (a callback
        raised, a second Ctrl-C), none of that epoch's steps ran, so it is where to continue. The
        step is the number of the epoch's steps that finished (by the global step), so a hook that
        raised in the middle of a step does not skip it.
        """
        if self._ended_epoch == self.epoch_num:
            return self.epoch_num + 1, 0
        # Counted from the global step: a hook that raised before or during a step leaves
        # local_step at a step that did not finish.
        return self.epoch_num, self.global_step - self.trainer.loop.epoch_first_global_step

    def _write_new(self, epoch, local_step):
        latest = self._latest()
        new = [p for p, old in zip(latest, self._seen) if p is not None and p != old]
        self._seen = latest
        for prefix in new:
            self.write(prefix, epoch, local_step)

    def write(self, prefix, epoch, local_step):
        """Write the resume state of checkpoint ``prefix`` for position ``(epoch, local_step)``."""
        if not self.trainer.is_chief:
            return
        step = checkpoint_step(prefix)
        if step is not None and step != self.global_step:
            logger.error(f"ResumeStateSaver: checkpoint {prefix} is from global step {step} but training is "
                         f"at step {self.global_step}; its resume state is not written. List ResumeStateSaver "
                         "after every ModelSaver.")
            return
        state = {"format": FORMAT_VERSION, "checkpoint": os.path.basename(prefix),
                 "global_step": self.global_step, "epoch": epoch, "local_step": local_step,
                 "steps_per_epoch": self.trainer.steps_per_epoch,
                 "callbacks": collect_callback_states(self.trainer.callbacks),
                 "iterator": None, "input_note": self.input_note}
        try:
            if self.iterator_state is not None:
                blob = self.iterator_state.save(self.trainer.sess)
                atomic_write(prefix + ITERATOR_SUFFIX, blob)
                state["iterator"] = {"file": os.path.basename(prefix) + ITERATOR_SUFFIX,
                                     "bytes": len(blob)}
            atomic_write(resume_state_path(prefix), json.dumps(state, indent=1, allow_nan=True))
        except (OSError, tf.errors.OpError) as e:
            logger.error(f"ResumeStateSaver could not write the resume state of {prefix}: {type(e).__name__}: {e}. A "
                         "resumed run will start from an earlier checkpoint.")
            return
        self.written.append(prefix)
        self._remove_orphans(os.path.dirname(prefix))

    @staticmethod
    def _remove_orphans(directory):
        """Remove resume states whose checkpoint was deleted (e.g. by ``max_to_keep``), and
        temporary files of writes that a killed process left behind."""
        for name in os.listdir(directory):
            if name.startswith("."):
                stale = name.endswith(".tmp") and (RESUME_SUFFIX + "." in name or
                                                   ITERATOR_SUFFIX + "." in name)
            else:
                suffix = next((s for s in (RESUME_SUFFIX, ITERATOR_SUFFIX) if name.endswith(s)),
                              None)
                stale = suffix is not None and not os.path.exists(
                    os.path.join(directory, name[:-len(suffix)] + ".index"))
            if stale:
                try:
                    os.remove(os.path.join(directory, name))
                except OSError as e:
                    logger.warning(f"ResumeStateSaver: could not remove the stale {name}: {e}.")
