"""Resuming a run: which checkpoint it starts from, and the session init that restores its
variables."""
import json

from tfloop.resume.state import RESUME_SUFFIX, resume_state_path
from tfloop.tfutils.sessinit import SaverRestore, SessionInit
from tfloop.tfutils.varmanip import checkpoint_reader, checkpoint_step, find_latest_checkpoint
from tfloop.utils import files

__all__ = ["find_resume_checkpoint", "checkpoint_global_step", "ResumeInit"]


def find_resume_checkpoint(directory):
    """The checkpoint ``model-<step>`` a resumed run starts from, or None.

    It is the newest complete one; when the directory holds resume states (``*.resume.json``), the
    newest complete one that has its resume state too (a process killed between writing a
    checkpoint and its state leaves the checkpoint without one). In a URL's directory
    (``gs://``, ``ram://``), whose filesystem may have no atomic rename, the resume state must
    also be readable JSON: a half-written newest one falls back to the checkpoint before.
    """
    if not files.isdir(directory):
        return None
    with_state = any(name.endswith(RESUME_SUFFIX) and not name.startswith(".")
                     for name in files.listdir(directory))
    whole_states = files.is_url(directory)

    def accept(prefix):
        if checkpoint_step(prefix) is None:
            return False
        if not with_state:
            return True
        return _readable_json(resume_state_path(prefix)) if whole_states else \
            files.isfile(resume_state_path(prefix))
    return find_latest_checkpoint(directory, accept=accept)


def _readable_json(path):
    try:
        json.loads(files.read_text(path))
    except (OSError, ValueError):
        return False
    return True


def checkpoint_global_step(prefix):
    """The global step stored in checkpoint ``prefix`` (its file name's step when it has none)."""
    reader = checkpoint_reader(prefix)
    if reader.has_tensor("global_step"):
        return int(reader.get_tensor("global_step"))
    return checkpoint_step(prefix)


class ResumeInit(SessionInit):
    """Restore the variables of the checkpoint a resumed run continues, as :class:`SaverRestore`.
    Made by :class:`AutoResumeTrainConfig`; the rest of the run's state (the input's position,
    the callbacks' states, where the loop continues) is restored by
    :meth:`~tfloop.resume.saver.ResumeStateSaver.restore` right after it.

    Example:
        >>> init = ResumeInit("train_log/run/model-12")
    """

    def __init__(self, prefix):
        self.prefix = prefix
        self._restore = SaverRestore(prefix)

    def _setup_graph(self):
        self._restore.setup_graph()

    def _run_init(self, sess):
        self._restore.init(sess)
