"""The file side of checkpoint writes that ModelSaver and MinSaver/MaxSaver share: the directory
they write to, one line for a failed write's error, and the removal of what an unfinished write
left behind.

Example:
    >>> directory = resolve_checkpoint_dir(None, "ModelSaver", "train_log/run")
    >>> remove_unfinished_writes(directory)       # a killed run's temporary files
"""
import re

from tfloop.compat import tf
from tfloop.utils import files, logger
from tfloop.utils.fs import display_path
from tfloop.utils.logdir_format import CHECKPOINT_PREFIX

__all__ = ["IO_ERRORS", "describe_io_error", "remove_unfinished_writes", "resolve_checkpoint_dir"]

# What a failed checkpoint write raises: Python file operations, or TF's file system via the op.
IO_ERRORS = (OSError, tf.errors.OpError)
# TensorFlow's temporary files of checkpoint model-<N> (group 1): a file of the bundle being
# written (model-N.data-00000-of-00001.tempstate<random>) or a sharded save's directory.
_UNFINISHED_WRITE = re.compile(rf"{re.escape(CHECKPOINT_PREFIX)}-(\d+)(?:\..*\.tempstate|_temp$)")


def resolve_checkpoint_dir(checkpoint_dir, who, logdir):
    """The checkpoint directory (``checkpoint_dir``, else the run's ``logdir``), created: a local
    path made absolute, a URL (``gs://bucket/run``) kept as it is for TensorFlow's file layer."""
    if checkpoint_dir is None:
        checkpoint_dir = logdir
        if checkpoint_dir is None:
            raise ValueError(
                f"{who} has no directory to write to: pass checkpoint_dir=... or set a log "
                "directory first with tfloop.logger.set_logger_dir(...).")
    checkpoint_dir = files.resolve(checkpoint_dir)
    try:
        files.makedirs(checkpoint_dir)
    except OSError as e:
        raise OSError(f"{who} cannot create its checkpoint directory {checkpoint_dir}: "
                      f"{e.strerror or e}. Choose a directory you can write to.") from None
    return checkpoint_dir


def describe_io_error(e):
    """One line for an IO error: TF's own message without its graph traceback."""
    if isinstance(e, tf.errors.OpError):
        lines = [line.strip() for line in (e.message or "").splitlines()]
        for i, line in enumerate(lines):
            if line.startswith("Node: ") and i + 1 < len(lines) and lines[i + 1]:
                return f"{type(e).__name__}: {lines[i + 1]}"
        first = next((line for line in lines if line), "")
        return f"{type(e).__name__}: {first}"
    return f"{type(e).__name__}: {e}"


def remove_unfinished_writes(directory, step=None):
    """Delete what a write killed midway left in ``directory``: TensorFlow's temporary files of a
    checkpoint (``model-N.data-...tempstate...``, a sharded save's ``model-N_temp`` directory),
    never listed and never to be finished, as large as the model. With ``step``, only those of
    ``model-<step>``: TensorFlow's Saver leaves them behind when a write fails (a full disk),
    where they would hold the space the next save needs."""
    if not files.isdir(directory):
        return
    for name in files.listdir(directory):
        match = _UNFINISHED_WRITE.match(name)
        if match is None or (step is not None and int(match.group(1)) != step):
            continue
        path = files.join(directory, name)
        try:
            if name.endswith("_temp") and files.isdir(path):
                files.rmtree(path)
            elif not name.endswith("_temp") and files.isfile(path):
                files.remove(path)
            else:
                continue
        except IO_ERRORS as e:
            logger.warning(f"ModelSaver: could not delete {display_path(path)}, left by an "
                           f"unfinished write: {describe_io_error(e)}")
            continue
        logger.info(f"ModelSaver: deleted {display_path(path)}, left by a write that did not "
                    "finish.")
