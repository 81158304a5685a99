"""Resuming a run: which checkpoint it starts from, and the session init that restores its
variables."""
from tfloop.resume.state import RESUME_SUFFIX, resume_state_path, resume_state_problem
from tfloop.tfutils.sessinit import SaverRestore, SessionInit
from tfloop.tfutils.varmanip import (
    checkpoint_reader,
    checkpoint_step,
    find_latest_checkpoint,
    is_complete_checkpoint,
    list_checkpoints,
)
from tfloop.utils import files, logger

__all__ = ["find_resume_checkpoint", "checkpoint_global_step", "ResumeInit"]


def find_resume_checkpoint(directory):
    """The checkpoint ``model-<step>`` a resumed run starts from, or None.

    It is the newest complete one; when the directory holds resume states (``*.resume.json``), the
    newest complete one that has its resume state too (a process killed between writing a
    checkpoint and its state leaves the checkpoint without one). When that state cannot be read
    (corrupt, or half-written on a filesystem without atomic rename such as ``gs://``), it is the
    newest earlier checkpoint with a readable state (logged), else that checkpoint alone (its
    state ignored).
    """
    if not files.isdir(directory):
        return None
    with_state = any(name.endswith(RESUME_SUFFIX) and not name.startswith(".")
                     for name in files.listdir(directory))

    def accept(prefix):
        if checkpoint_step(prefix) is None:
            return False
        return not with_state or files.isfile(resume_state_path(prefix))
    newest = find_latest_checkpoint(directory, accept=accept)
    problem = resume_state_problem(newest) if newest is not None else None
    if problem is None:
        return newest
    earlier = _earlier_with_readable_state(directory, newest)
    if earlier is None:
        return newest
    logger.warning(f"{problem}; resuming from the earlier checkpoint {files.basename(earlier)} "
                   "and its resume state instead.")
    return earlier


def _earlier_with_readable_state(directory, newest):
    step = checkpoint_step(newest)
    for prefix in reversed(list_checkpoints(directory)):
        earlier = checkpoint_step(prefix)
        if earlier is not None and earlier < step and is_complete_checkpoint(prefix)[0] and \
                files.isfile(resume_state_path(prefix)) and resume_state_problem(prefix) is None:
            return prefix
    return None



def checkpoint_global_step(prefix):
    """The global step stored in checkpoint ``prefix`` (its file name's step when it has none)."""
    reader = checkpoint_reader(prefix)
    if reader.has_tensor("global_step"):
        return int(reader.get_tensor("global_step"))
    return checkpoint_step(prefix)


class ResumeInit(SessionInit):
    """Restore the variables of the checkpoint a resumed run continues, as :class:`SaverRestore`.
    Made by :class:`AutoResumeTrainConfig`; the rest of the run's state (the input's position,
    the callbacks' states, where the loop continues) is the trainer's to restore
    (``Trainer.train(resume_from=)``, :mod:`tfloop.resume.restore`).

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
