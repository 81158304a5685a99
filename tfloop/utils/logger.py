"""tfloop's logger: console output, plus ``<log dir>/log.log`` once a log directory is set.

Use it as a module::

    from tfloop.utils import logger
    logger.set_logger_dir("train_log/mnist", action="keep")
    logger.info("hello")

The log directory is where callbacks and monitors write (checkpoints, ``stats.json``, event files).
"""
import atexit
import json
import logging
import os
import shutil
import sys
import tempfile
from datetime import datetime

from tfloop.utils.dirlock import LOCK_FILE_NAME, DirLock, LogDirInUseError
from tfloop.utils.fs import display_path
from tfloop.utils.logdir_format import LOG_FILE

__all__ = ["set_logger_dir", "get_logger_dir", "path_in_logger_dir", "auto_set_dir", "info",
           "warning", "warn", "error", "exception", "debug", "LOG_DIR_ACTIONS", "console_stream",
           "set_console_stream",
           "is_debug_enabled", "unset_logger_dir", "LogDirInUseError",
           "critical", "setLevel", "addFilter", "detail", "set_verbose", "is_verbose"]

_LOGGER = logging.getLogger("tfloop")
_logger = _LOGGER  # tensorpack's name for the logging.Logger (its unit tests use it)
_LOGGER.propagate = False
_LOGGER.setLevel(logging.INFO)

_FORMAT = "[%(asctime)s @%(filename)s:%(lineno)d] %(message)s"
_DATE_FORMAT = "%m%d %H:%M:%S"


class _Formatter(logging.Formatter):
    def format(self, record):
        if record.levelno >= logging.ERROR:
            record = logging.makeLogRecord(dict(record.__dict__, msg="ERR " + str(record.msg)))
        elif record.levelno >= logging.WARNING:
            record = logging.makeLogRecord(dict(record.__dict__, msg="WRN " + str(record.msg)))
        return super().format(record)


_VERBOSE = None  # set_verbose's answer; None: the TFLOOP_VERBOSE environment variable decides


def is_verbose():
    """Whether the console shows the routine details (:func:`detail` lines): after
    ``set_verbose(True)``, with ``TFLOOP_VERBOSE=1`` in the environment, or at DEBUG level."""
    if _VERBOSE is not None:
        return _VERBOSE
    return os.environ.get("TFLOOP_VERBOSE", "").strip().lower() not in ("", "0", "false", "no") \
        or _LOGGER.isEnabledFor(logging.DEBUG)


def set_verbose(verbose=True):
    """Show the routine details on the console too (True), or only in ``log.log`` (False, the
    default); None goes back to the ``TFLOOP_VERBOSE`` environment variable.

    Example:
        >>> logger.set_verbose(True)    # each checkpoint written, each validation's time, ...
    """
    global _VERBOSE
    if verbose is not None and not isinstance(verbose, bool):
        raise TypeError(f"set_verbose takes True, False or None, got {verbose!r}.")
    _VERBOSE = verbose


def detail(msg, *args):
    """Log a routine detail (a checkpoint written, an epoch started): an INFO line in
    ``log.log`` and for every handler, on the console only when :func:`is_verbose`."""
    _LOGGER.info(msg, *args, extra={"tfloop_detail": True}, stacklevel=2)


def _console_shows(record):
    return is_verbose() or _LOGGER.isEnabledFor(logging.DEBUG) or not getattr(
        record, "tfloop_detail", False)


def _make_console_handler():
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(_Formatter(_FORMAT, datefmt=_DATE_FORMAT))
    handler.addFilter(_console_shows)
    return handler


_CONSOLE_HANDLER = _make_console_handler()
_LOGGER.addHandler(_CONSOLE_HANDLER)

def console_stream():
    """The stream console log lines go to (``sys.stdout`` unless changed); progress bars use it."""
    return _CONSOLE_HANDLER.stream


def is_debug_enabled():
    """Whether DEBUG lines are logged (``logger.setLevel(logging.DEBUG)``)."""
    return _LOGGER.isEnabledFor(logging.DEBUG)


def set_console_stream(stream):
    """Send console log lines, and progress bars made afterwards, to ``stream`` (e.g.
    ``sys.stderr``)."""
    _CONSOLE_HANDLER.setStream(stream)


info = _LOGGER.info
warning = _LOGGER.warning
warn = _LOGGER.warning
error = _LOGGER.error
exception = _LOGGER.exception
debug = _LOGGER.debug
critical = _LOGGER.critical
setLevel = _LOGGER.setLevel  # noqa: N816  (tensorpack's names, from logging.Logger)
addFilter = _LOGGER.addFilter  # noqa: N816

LOG_DIR = None
_FILE_HANDLER = None
_LOCK = None
LOG_FILE_NAME = LOG_FILE

LOG_DIR_ACTIONS = {
    "k": "keep", "keep": "keep",
    "b": "backup", "backup": "backup",
    "d": "delete", "delete": "delete",
    "n": "new", "new": "new",
    "q": "quit", "quit": "quit",
}


def _is_interactive():
    try:
        return sys.stdin is not None and sys.stdin.isatty() and not os.environ.get("CI")
    except (AttributeError, ValueError):
        return False


def _timestamp():
    return datetime.now().strftime("%m%d-%H%M%S")


def _ask_action(dirname):
    prompt = (f"Log directory {dirname} exists. Use [k]eep / [b]ackup / [d]elete / [n]ew / [q]uit: "
              )
    while True:
        answer = input(prompt).strip().lower()
        if answer in LOG_DIR_ACTIONS:
            return LOG_DIR_ACTIONS[answer]


def _close_file_handler():
    global _FILE_HANDLER
    if _FILE_HANDLER is not None:
        _LOGGER.removeHandler(_FILE_HANDLER)
        _FILE_HANDLER.close()
        _FILE_HANDLER = None


class _LogFileHandler(logging.FileHandler):
    """The log file; a line that cannot be written (a full disk) is reported on stderr once per
    burst of failures, not with a traceback per line, and never stops training."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._failing = False
        self._failed_now = False

    def emit(self, record):
        self._failed_now = False
        super().emit(record)
        if self._failing and not self._failed_now:
            self._failing = False
            sys.stderr.write(f"tfloop: writing the log file {self.baseFilename} again.\n")

    def handleError(self, record):
        self._failed_now = True
        if self._failing:
            return
        self._failing = True
        error = sys.exc_info()[1]
        try:
            sys.stderr.write(f"tfloop: cannot write the log file {self.baseFilename} "
                             f"({type(error).__name__}: {error}); its lines are lost until it "
                             "works again, the console still gets them.\n")
        except (OSError, ValueError):
            pass


def _release_lock():
    global _LOCK
    if _LOCK is not None:
        _LOCK.release()
        _LOCK = None


def _has_content(dirname):
    return any(name != LOCK_FILE_NAME for name in os.listdir(dirname))


def _shares_the_chiefs_dir():
    """Whether this process is a non-chief task of a TF_CONFIG cluster (``ps``, or a worker other
    than the chief): every task sets the chief's log directory, and the trainer then moves the
    others to ``<log dir>/worker-<index>``; only the chief owns the shared one. The chief is
    worker 0, or the ``chief`` task where the cluster has one (Kubeflow's layout)."""
    try:
        tf_config = json.loads(os.environ.get("TF_CONFIG") or "{}")
        task, cluster = tf_config.get("task") or {}, tf_config.get("cluster") or {}
    except (ValueError, AttributeError):
        return False
    if task.get("type") == "worker":
        return "chief" in cluster or str(task.get("index", 0)) != "0"
    return task.get("type") == "ps"


def _lock_existing(dirname):
    """Own ``dirname`` before acting on it: LogDirInUseError when a live run does."""
    if _shares_the_chiefs_dir():
        return None
    lock = DirLock(dirname)
    try:
        lock.acquire()
    except OSError as e:
        raise PermissionError(f"Log directory {dirname} is not writable ({e.strerror or e}): "
                              "choose a directory you can write to.") from None
    owner = lock.taken_over
    if owner and owner.get("pid") != os.getpid() and not owner.get("released"):
        info(f"Log directory {dirname}: the lock of process {owner.get('pid')} (host "
             f"{owner.get('host')}, started {owner.get('start')}) was left by a run that is no "
             "longer running; taking it over.")
    return lock


def _check_writable(dirname):
    # A file of this process's own (the tasks of a cluster probe the chief's directory at once).
    try:
        with tempfile.TemporaryFile(dir=dirname) as f:
            f.write(b"ok")
    except OSError as e:
        raise PermissionError(
            f"Log directory {dirname} is not writable ({e.strerror or e}): choose a directory you "
            "can write to.") from None


def _versions():
    """``tfloop 0.1.0, TensorFlow 2.21.0, ...``: of the packages already imported (imports none)."""
    from tfloop.version import __version__
    found = ["tfloop " + __version__]
    for module, label in (("tensorflow", "TensorFlow"), ("keras", "Keras"), ("numpy", "numpy")):
        version = getattr(sys.modules.get(module), "__version__", None)
        if version:
            found.append(f"{label} {version}")
    found.append("Python " + sys.version.split()[0])
    return ", ".join(found)


def _check_log_dir_name(dirname):
    """The normalised log dir path; refuses paths that name the working directory or a parent.

    An empty path normalises to ``"."``: deleting, moving or filling it would act on the user's
    working directory (their source tree), so it is never a log directory.
    """
    if dirname is None or not isinstance(dirname, (str, os.PathLike)):
        raise TypeError("set_logger_dir needs a directory path (str or pathlib.Path), got "
                        f"{dirname!r}; e.g. set_logger_dir('train_log/run1').")
    raw = os.fspath(dirname)
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
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


def set_logger_dir(dirname: str | os.PathLike[str], action: str | None = None) -> str:
    """Set the log directory: every later log line also goes to ``<dirname>/log.log``.

    Args:
        dirname (str): the directory; created when missing.
        action (str): what to do when ``dirname`` exists and is not empty: ``"keep"``/``"k"``
            (use it as is, e.g. to resume), ``"backup"``/``"b"`` (rename it to
            ``<dirname><timestamp>``), ``"delete"``/``"d"``, ``"new"``/``"n"`` (use
            ``<dirname><timestamp>`` instead), ``"quit"``/``"q"``. ``None`` asks on an interactive
            terminal and raises otherwise.

    Raises:
        FileExistsError: the directory exists and no action was given in a non-interactive process.
        ValueError: the action is not one of the above, or ``dirname`` is empty, the working
            directory or one of its parents (which ``"delete"`` would wipe).
        TypeError: ``dirname`` is not a path (e.g. ``None``).
        PermissionError: the directory cannot be written to.
        LogDirInUseError: another live process owns the directory (see below).

    The run owns the directory until :func:`unset_logger_dir`, the next ``set_logger_dir`` or its
    exit: it holds the lock ``<dirname>/.tfloop.lock`` (``fcntl.flock``; the file names the
    owner's pid, host and start time). Every action, ``"keep"`` included, first takes that lock,
    so a second run never deletes, moves or writes into the directory of a live one. A lock left
    by a process that died (even by ``kill -9``) is free and taken over.

    Example:
        >>> logger.set_logger_dir("train_log/run1", action="backup")
    """
    global LOG_DIR
    if action is not None and action not in LOG_DIR_ACTIONS:
        raise ValueError(f"Unknown log dir action {action!r}: use one of keep, backup, delete, "
                         "new, quit.")
    dirname = _check_log_dir_name(dirname)
    _close_file_handler()
    _release_lock()
    LOG_DIR = None
    lock = _lock_existing(dirname) if os.path.isdir(dirname) else None
    try:
        dirname, lock = _apply_action(dirname, action, lock)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    global _FILE_HANDLER, _LOCK
    if lock is not None:
        atexit.unregister(_release_lock)
        atexit.register(_release_lock)  # a clean exit marks the lock released (see dirlock)
    _LOCK = lock
    LOG_DIR = dirname
    _FILE_HANDLER = _LogFileHandler(os.path.join(dirname, LOG_FILE_NAME), encoding="utf-8")
    _FILE_HANDLER.setFormatter(_Formatter(_FORMAT, datefmt=_DATE_FORMAT))
    _LOGGER.addHandler(_FILE_HANDLER)
    detail("Argv: " + " ".join(sys.argv))
    detail("Versions: " + _versions())
    info(f"Log directory: {display_path(dirname)}")
    return dirname


def _apply_action(dirname, action, lock):
    """Act on an existing ``dirname`` (whose ``lock`` this process holds), create the directory
    and own it: ``(directory to use, its lock)``."""
    if os.path.isdir(dirname) and _has_content(dirname):
        action = _resolve_action(dirname, action)
        dirname = _act_on_existing(dirname, action)
        if action != "keep" and lock is not None:
            lock.release()
            lock = None
    elif os.path.exists(dirname) and not os.path.isdir(dirname):
        raise FileExistsError(f"Log directory {dirname} exists and is not a directory: choose "
                              "another path, or remove that file.")

    try:
        os.makedirs(dirname, exist_ok=True)
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
                f"set_logger_dir({dirname!r}, action=...) with one of keep, backup, delete, new."
                )
        action = _ask_action(dirname)
    action = LOG_DIR_ACTIONS[action]
    if action == "quit":
        raise SystemExit(f"Log directory {dirname} exists; quitting as asked.")
    return action


def _act_on_existing(dirname, action):
    """Back up, delete or keep the existing ``dirname``; returns the directory to use."""
    if action == "backup":
        backup = dirname + _timestamp()
        shutil.move(dirname, backup)
        info(f"Existing log directory moved to {backup}.")
    elif action == "delete":
        shutil.rmtree(dirname, ignore_errors=True)
        info(f"Existing log directory {dirname} deleted.")
    elif action == "new":
        dirname = dirname + _timestamp()
        info(f"Using a new log directory {dirname}.")
    return dirname


def auto_set_dir(action=None, name=None):
    """Set the log directory to ``train_log/<script name>[:name]`` next to the working directory."""
    script = os.path.basename(sys.argv[0] or "interactive")
    script = os.path.splitext(script)[0]
    dirname = os.path.join("train_log", script if name is None else f"{script}:{name}")
    return set_logger_dir(dirname, action=action)


def get_logger_dir() -> str | None:
    """The current log directory, or ``None`` when none was set."""
    return LOG_DIR


def path_in_logger_dir(path: str, needs_dir: str) -> str:
    """``path`` as an absolute path: as it is when absolute, else inside the log directory.

    Raises:
        ValueError: ``path`` is relative and no log directory is set; the message is
            ``needs_dir`` (what wanted the path, and the fix).

    Example:
        >>> path_in_logger_dir("hyper.txt", "HumanHyperParamSetter needs a log directory.")
    """
    if os.path.isabs(path):
        return path
    if LOG_DIR is None:
        raise ValueError(needs_dir)
    return os.path.abspath(os.path.join(LOG_DIR, path))


def unset_logger_dir() -> None:
    """Stop writing to the log file and give up the directory's lock (its files stay)."""
    global LOG_DIR
    _close_file_handler()
    _release_lock()
    LOG_DIR = None
