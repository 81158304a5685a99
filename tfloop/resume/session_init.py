"""Restoring a resumed run: which checkpoint it starts from, and the session init that restores it."""
import os

from tfloop.compat import tf
from tfloop.input.base import InputSource
from tfloop.resume.state import RESUME_SUFFIX, apply_callback_states, resume_state_path
from tfloop.tfutils.sessinit import SaverRestore, SessionInit
from tfloop.tfutils.varmanip import checkpoint_step, find_latest_checkpoint
from tfloop.utils import logger

__all__ = ["find_resume_checkpoint", "checkpoint_global_step", "ResumeInit"]


def find_resume_checkpoint(directory):
    """The checkpoint ``model-<step>`` a resumed run starts from, or None.

    It is the newest complete one; when the directory holds resume states (``*.resume.json``), the
    newest complete one that has its resume state too (a process killed between writing a
    checkpoint and its state leaves the checkpoint without one).
    """
    if not os.path.isdir(directory):
        return None
    with_state = any(name.endswith(RESUME_SUFFIX) and not name.startswith(".")
                     for name in os.listdir(directory))

    def accept(prefix):
        if checkpoint_step(prefix) is None:
            return False
        return not with_state or os.path.isfile(resume_state_path(prefix))
    return find_latest_checkpoint(directory, accept=accept)


def checkpoint_global_step(prefix):
    """The global step stored in checkpoint ``prefix`` (its file name's step when it has none)."""
    reader = tf.train.load_checkpoint(prefix)
    if reader.has_tensor("global_step"):
        return int(reader.get_tensor("global_step"))
    return checkpoint_step(prefix)


class ResumeInit(SessionInit):
    """Restore a checkpoint with everything a resumed run needs: the variables (as
    :class:`SaverRestore`), the input iterator's position, the callbacks' states, and the step in
    the epoch to continue from. Made by :class:`AutoResumeTrainConfig`.

    Example:
        >>> init = ResumeInit("train_log/run/model-12", state, data, state_saver, (5, 0))
    """

    def __init__(self, prefix, state, source, state_saver, position):
        self.prefix = prefix
        self.state = state
        self.source = source
        self.state_saver = state_saver
        self.position = position
        self._restore = SaverRestore(prefix)
        self._iterator = None

    def _setup_graph(self):
        self._restore.setup_graph()
        blob = (self.state or {}).get("iterator_bytes")
        if blob is None:
            return
        note = self.state_saver.input_note
        if note is None and type(self.source).load_state_dict is InputSource.load_state_dict:
            note = f"{self.source} keeps no position of this kind"
        if note is not None:
            logger.warning(f"{resume_state_path(self.prefix)} has an input position, but this run's input cannot be saved or "
                           f"restored ({note}); the input restarts from its beginning.")
            return
        self._iterator = blob

    def _run_init(self, sess):
        self._restore.init(sess)
        if self._iterator is not None:
            try:
                self.source.load_state_dict(sess, self._iterator)
            except tf.errors.OpError as e:
                raise ValueError(
                    f"The input position saved in {self.prefix + '.iterator'} does not fit this "
                    f"run's input pipeline ({e.message.splitlines()[0]}). Resume with the same "
                    f"dataset definition, or delete {resume_state_path(self.prefix)} to restart "
                    "the input from its beginning.") from None
            logger.info(f"Restored the input position of {self.prefix}.")
        trainer = self.state_saver.trainer
        if self.state is not None and trainer is not None:
            apply_callback_states(trainer.callbacks, self.state.get("callbacks", {}),
                                  resume_state_path(self.prefix))
        if trainer is not None:
            trainer.load_loop_state({"epoch": self.position[0], "local_step": self.position[1]})
