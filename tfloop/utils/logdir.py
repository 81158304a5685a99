"""Owning the process's default log directory: choosing it, acting on an existing one, its lock.

``logger.set_logger_dir`` (tensorpack's way to name a run's directory) claims a directory here and
then sends the log lines to ``<dir>/log.log``. A trainer takes the directory claimed here as its
``logdir`` when its run starts and none was given to it; callbacks and monitors read
``trainer.logdir``, never this module.

The directory is a local path or a URL TensorFlow's file layer knows (``gs://``, ``ram://``; see
:mod:`tfloop.utils.files`). A local directory is owned through its lock
(:mod:`tfloop.utils.dirlock`); a URL has none: nothing keeps a second run out of it, and a warning
says so. A URL's storage must answer within a deadline first (:mod:`tfloop.utils.url_contact`).

Example:
    >>> claim("train_log/run1", "keep")
    'train_log/run1'
    >>> current()
    'train_log/run1'
    >>> release()
"""
import atexit
import json
import logging
import os
import sys
import tempfile
import uuid
from datetime import datetime

from tfloop.utils import files
from tfloop.utils.dirlock import LOCK_FILE_NAME, DirLock
from tfloop.utils.url_contact import check_reachable

__all__ = ["ACTIONS", "claim", "release", "current", "auto_dir_name", "path_in",
           "local_path_in", "task_subdir"]

_LOG = logging.getLogger("tfloop")

ACTIONS = {
    "k": "keep", "keep": "keep",
    "b": "backup", "backup": "backup",
    "d": "delete", "delete": "delete",
    "n": "new", "new": "new",
    "q": "quit", "quit": "quit",
}

_CURRENT = None
_LOCK = None


def current():
    """The directory claimed by :func:`claim`, or None."""
    return _CURRENT


def task_subdir():
    """``worker-<index>`` or ``ps-<index>`` for a task of a ``TF_CONFIG`` cluster other than the
    chief, None otherwise. Every task names the chief's log directory; only the chief owns it,
    the others write into this subdirectory of it. The chief is worker 0, or the ``chief`` task
    where the cluster has one (Kubeflow's layout: there worker i is worker i + 1)."""
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        task, cluster = tf_config.get("task") or {}, tf_config.get("cluster") or {}
        kind, index = task.get("type"), int(task.get("index", 0))
    except (ValueError, TypeError, AttributeError):
        return None
    if kind == "worker" and "chief" in cluster:
        return f"worker-{index + 1}"
    if kind == "ps" or (kind == "worker" and index != 0):
        return f"{kind}-{index}"
    return None


def _is_interactive():
    try:
        return sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    except (AttributeError, ValueError):
        return False


def _timestamp():
    return datetime.now().strftime("%m%d-%H%M%S")


def _ask_action(dirname):
    prompt = f"Log directory {dirname} exists. Use [k]eep / [b]ackup / [d]elete / [n]ew / [q]uit: "
    while True:
        answer = input(prompt).strip().lower()
        if answer in ACTIONS:
            return ACTIONS[answer]


def _release_lock():
    global _LOCK
    if _LOCK is not None:
        _LOCK.release()
        _LOCK = None


def release():
    """Give up the claimed directory and its lock (its files stay)."""
    global _CURRENT
    _release_lock()
    _CURRENT = None


def _has_content(dirname):
    return any(name.rstrip("/") != LOCK_FILE_NAME for name in files.listdir(dirname))


def _lock_existing(dirname):
    """Own the local ``dirname`` before acting on it: LogDirInUseError when a live run does. None
    for a URL (no lock there) and for a cluster task that writes into the chief's directory."""
    if files.is_url(dirname) or task_subdir() is not None:
        return None
    lock = DirLock(dirname)
    try:
        lock.acquire()
    except OSError as e:
        raise PermissionError(f"Log directory {dirname} is not writable ({e.strerror or e}): "
                              "choose a directory you can write to.") from None
    owner = lock.taken_over
    if owner and owner.get("pid") != os.getpid() and not owner.get("released"):
        _LOG.info(f"Log directory {dirname}: the lock of process {owner.get('pid')} (host "
                  f"{owner.get('host')}, started {owner.get('start')}) was left by a run that is "
                  "no longer running; taking it over.")
    return lock


def _check_writable(dirname):
    # A file of this process's own (the tasks of a cluster probe the chief's directory at once).
    try:
        if files.is_url(dirname):
            probe = files.join(dirname, f".tfloop-probe-{uuid.uuid4().hex}")
            with files.open_file(probe, "wb") as f:
                f.write(b"ok")
            files.remove(probe)
            return
        with tempfile.TemporaryFile(dir=dirname) as f:
            f.write(b"ok")
    except Exception as e:  # OSError, or TensorFlow's error for a URL
        raise PermissionError(
            f"Log directory {dirname} is not writable ({files.describe_error(e)}): choose a "
            "directory you can write to.") from None


def _check_name(dirname):
    """The normalised directory path; refuses paths that name the working directory or a parent,
    and URLs whose scheme TensorFlow's file layer does not know.

    An empty path normalises to ``"."``: deleting, moving or filling it would act on the user's
    working directory (their source tree), so it is never a log directory.
    """
    if dirname is None or not isinstance(dirname, (str, os.PathLike)):
        raise TypeError("set_logger_dir needs a directory path (str or pathlib.Path), got "
                        f"{dirname!r}; e.g. set_logger_dir('train_log/run1').")
    raw = os.fspath(dirname)
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    if files.is_url(raw):
        url = raw.rstrip("/")
        if url.endswith(":/"):
            raise ValueError(f"set_logger_dir got {raw!r}, which names no directory: give one, "
                             "e.g. set_logger_dir('gs://bucket/run1').")
        return files.resolve(url)
    if not raw.strip():
        raise ValueError(f"set_logger_dir got an empty path {raw!r}, which means the working "
                         f"directory {os.getcwd()}: give a directory of its own, e.g. "
                         "set_logger_dir('train_log/run1').")
    normalised = os.path.normpath(raw)
    resolved = os.path.realpath(normalised)
    cwd = os.path.realpath(os.getcwd())
    if resolved == cwd or cwd.startswith(resolved.rstrip(os.sep) + os.sep) or resolved == os.sep:
        raise ValueError(f"Log directory {raw!r} is the working directory {cwd} or one of its "
                         "parents: give a directory of its own, e.g. "
                         "set_logger_dir('train_log/run1').")
    return normalised


def claim(dirname, action=None):
    """Make ``dirname`` the process's log directory (see ``logger.set_logger_dir`` for
    ``action`` and the errors); returns the directory to use (another one for ``"new"``)."""
    global _CURRENT, _LOCK
    if action is not None and action not in ACTIONS:
        raise ValueError(f"Unknown log dir action {action!r}: use one of keep, backup, delete, "
                         "new, quit.")
    dirname = _check_name(dirname)
    check_reachable(dirname)
    release()
    lock = _lock_existing(dirname) if files.isdir(dirname) else None
    try:
        dirname, lock = _apply_action(dirname, action, lock)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    if lock is not None:
        atexit.unregister(_release_lock)
        atexit.register(_release_lock)  # a clean exit marks the lock released (see dirlock)
    elif files.is_url(dirname):
        _LOG.warning(f"Log directory {dirname}: this filesystem has no lock tfloop can hold, so "
                     "nothing keeps a second run out of this directory: start one run per "
                     "directory (see docs/resume.md).")
    _LOCK = lock
    _CURRENT = dirname
    return dirname


def _apply_action(dirname, action, lock):
    """Act on an existing ``dirname`` (whose ``lock`` this process holds), create the directory
    and own it: ``(directory to use, its lock)``."""
    if files.isdir(dirname) and _has_content(dirname):
        action = _resolve_action(dirname, action)
        dirname = _act_on_existing(dirname, action)
        if action != "keep" and lock is not None:
            lock.release()
            lock = None
    elif files.exists(dirname) and not files.isdir(dirname):
        raise FileExistsError(f"Log directory {dirname} exists and is not a directory: choose "
                              "another path, or remove that file.")
    try:
        files.makedirs(dirname)
    except OSError as e:
        raise PermissionError(f"Cannot create log directory {dirname} ({e.strerror or e}): "
                              "choose a directory you can write to.") from None
    _check_writable(dirname)
    if lock is None:
        lock = _lock_existing(dirname)
    return dirname, lock


def _resolve_action(dirname, action):
    """The canonical action for the existing ``dirname``: ``action``, or the user's answer."""
    if action is None:
        if not _is_interactive():
            raise FileExistsError(
                f"Log directory {dirname} already exists and no action was given: call "
                f"set_logger_dir({dirname!r}, action=...) with one of keep, backup, delete, new.")
        action = _ask_action(dirname)
    action = ACTIONS[action]
    if action == "quit":
        raise SystemExit(f"Log directory {dirname} exists; quitting as asked.")
    return action


def _act_on_existing(dirname, action):
    """Back up, delete or keep the existing ``dirname``; returns the directory to use."""
    if action == "backup":
        backup = dirname + _timestamp()
        files.move_tree(dirname, backup)
        _LOG.info(f"Existing log directory moved to {backup}.")
    elif action == "delete":
        files.rmtree(dirname)
        _LOG.info(f"Existing log directory {dirname} deleted.")
    elif action == "new":
        dirname = dirname + _timestamp()
        _LOG.info(f"Using a new log directory {dirname}.")
    return dirname


def auto_dir_name(name=None):
    """``train_log/<script name>[:name]``: tensorpack's directory for ``logger.auto_set_dir``."""
    script = os.path.basename(sys.argv[0] or "interactive")
    script = os.path.splitext(script)[0]
    return os.path.join("train_log", script if name is None else f"{script}:{name}")


def path_in(logdir, path, needs_dir):
    """``path`` as a callback uses it: as it is when absolute (or a URL), else inside ``logdir``
    (a trainer's ``logdir``).

    Raises:
        ValueError: ``path`` is relative and ``logdir`` is None; the message is ``needs_dir``
            (what wanted the path, and the fix).

    Example:
        >>> path_in(self.trainer.logdir, "hyper.txt", "HumanHyperParamSetter needs a log dir.")
    """
    if files.is_url(path) or os.path.isabs(path):
        return path
    if logdir is None:
        raise ValueError(needs_dir)
    return files.resolve(files.join(logdir, path))


def local_path_in(logdir, path, needs_dir, who):
    """:func:`path_in` for a file that ``who`` (a callback) reads with the operating system's own
    calls (a file touched by hand, a FIFO): it must be on a local disk.

    Raises:
        ValueError: as :func:`path_in`, or the path is a URL (``logdir`` is one).
    """
    path = path_in(logdir, path, needs_dir)
    if files.is_url(path):
        raise ValueError(f"{who} reads {path}, which is not on a local disk (the log directory is "
                         "a URL): give it an absolute local path.")
    return path
