"""tfloop's logger: console output, plus ``<log dir>/log.log`` once a log directory is set.

Use it as a module::

    from tfloop.utils import logger
    logger.set_logger_dir("train_log/mnist", action="keep")
    logger.info("hello")

The log directory set here is the default ``logdir`` of a trainer's run, where callbacks and
monitors write (checkpoints, ``stats.json``, event files); choosing and owning it is
:mod:`tfloop.utils.logdir`'s concern, writing the log lines this module's.
"""
import logging
import os
import sys
import time

from tfloop.utils import files, logdir
from tfloop.utils.dirlock import LogDirInUseError
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


LOG_FILE_NAME = LOG_FILE
LOG_DIR_ACTIONS = logdir.ACTIONS
_FILE_HANDLER = None


class _ReportsFailures:
    """A log file's handler: a line that cannot be written (a full disk) is reported on stderr
    once per burst of failures, not with a traceback per line, and never stops training."""

    baseFilename: str
    _failing = False
    _failed_now = False

    def emit(self, record):
        self._failed_now = False
        super().emit(record)  # type: ignore[misc]
        if self._failing and not self._failed_now:
            self._failing = False
            sys.stderr.write(f"tfloop: writing the log file {self.baseFilename} again.\n")

    def handleError(self, record):  # noqa: N802  (logging.Handler's name)
        self._failed_now = True
        if self._failing:
            return
        self._failing = True
        error = sys.exc_info()[1]
        try:
            sys.stderr.write(f"tfloop: cannot write the log file {self.baseFilename} "
                             f"({type(error).__name__}: {files.describe_error(error)}); its lines "
                             "are lost until it works again, the console still gets them.\n")
        except (OSError, ValueError):
            pass


class _LogFileHandler(_ReportsFailures, logging.FileHandler):
    """``log.log`` on a local disk: every line written as it comes."""


class _URLLogFileHandler(_ReportsFailures, logging.StreamHandler):
    """``log.log`` in a URL's directory (``gs://``, ``ram://``), appended through TensorFlow's
    file layer. On object stores every flush uploads the file again, so lines are flushed at most
    every ``FLUSH_SECS``, at once for a warning or an error, and when the file is closed."""

    FLUSH_SECS = 10.0

    def __init__(self, path):
        super().__init__(files.open_file(path, "a"))
        self.baseFilename = path
        self._urgent = False
        self._flushed_at = time.monotonic()

    def emit(self, record):
        self._urgent = record.levelno >= logging.WARNING
        super().emit(record)

    def flush(self):
        if self._urgent or time.monotonic() - self._flushed_at >= self.FLUSH_SECS:
            self.flush_now()

    def flush_now(self):
        self._urgent, self._flushed_at = False, time.monotonic()
        with self.lock:
            if self.stream is not None:
                self.stream.flush()

    def close(self):
        try:
            self.flush_now()
        except Exception:
            self.handleError(None)
        finally:
            stream, self.stream = self.stream, None
            try:
                if stream is not None:
                    stream.close()
            except Exception:
                self.handleError(None)
            super().close()


def _open_log_file(dirname):
    """The handler of ``<dirname>/log.log`` (``<dirname>/<task>/log.log`` for a cluster task
    other than the chief)."""
    subdir = logdir.task_subdir()
    if subdir is not None:
        dirname = files.join(dirname, subdir)
        files.makedirs(dirname)
    path = files.join(dirname, LOG_FILE_NAME)
    handler = _URLLogFileHandler(path) if files.is_url(path) else \
        _LogFileHandler(path, encoding="utf-8")
    handler.setFormatter(_Formatter(_FORMAT, datefmt=_DATE_FORMAT))
    return handler


def _close_file_handler():
    global _FILE_HANDLER
    if _FILE_HANDLER is not None:
        _LOGGER.removeHandler(_FILE_HANDLER)
        _FILE_HANDLER.close()
        _FILE_HANDLER = None


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


def set_logger_dir(dirname: str | os.PathLike[str], action: str | None = None) -> str:
    """Set the log directory: every later log line also goes to ``<dirname>/log.log``, and a
    trainer whose run starts without a ``logdir`` of its own writes its files there.

    Args:
        dirname (str): the directory, created when missing: a local path or a URL TensorFlow's
            file layer knows (``gs://bucket/run``, ``ram://run``; see docs/resume.md).
        action (str): what to do when ``dirname`` exists and is not empty: ``"keep"``/``"k"``
            (use it as is, e.g. to resume), ``"backup"``/``"b"`` (rename it to
            ``<dirname><timestamp>``), ``"delete"``/``"d"``, ``"new"``/``"n"`` (use
            ``<dirname><timestamp>`` instead), ``"quit"``/``"q"``. ``None`` asks on an interactive
            terminal and raises otherwise.

    Raises:
        FileExistsError: the directory exists and no action was given in a non-interactive process.
        ValueError: the action is not one of the above, or ``dirname`` is empty, the working
            directory or one of its parents (which ``"delete"`` would wipe), or a URL whose scheme
            TensorFlow does not know (:class:`~tfloop.utils.files.UnknownSchemeError`, naming the
            plugin to install).
        TypeError: ``dirname`` is not a path (e.g. ``None``).
        PermissionError: the directory cannot be created or written to.
        LogDirInUseError: another live process owns the directory (see below).

    The run owns a local directory until :func:`unset_logger_dir`, the next ``set_logger_dir`` or
    its exit: it holds the lock ``<dirname>/.tfloop.lock`` (``fcntl.flock``; the file names the
    owner's pid, host and start time). Every action, ``"keep"`` included, first takes that lock,
    so a second run never deletes, moves or writes into the directory of a live one. A lock left
    by a process that died (even by ``kill -9``) is free and taken over. A URL has no lock (a
    warning says so). The log directory itself lives in :mod:`tfloop.utils.logdir`.

    Example:
        >>> logger.set_logger_dir("train_log/run1", action="backup")
    """
    global _FILE_HANDLER
    _close_file_handler()
    dirname = logdir.claim(dirname, action)
    try:
        _FILE_HANDLER = _open_log_file(dirname)
    except BaseException:
        logdir.release()
        raise
    _LOGGER.addHandler(_FILE_HANDLER)
    detail("Argv: " + " ".join(sys.argv))
    detail("Versions: " + _versions())
    info(f"Log directory: {display_path(dirname)}")
    return dirname


def auto_set_dir(action=None, name=None):
    """Set the log directory to ``train_log/<script name>[:name]`` next to the working directory."""
    return set_logger_dir(logdir.auto_dir_name(name), action=action)


def get_logger_dir() -> str | None:
    """The directory set by :func:`set_logger_dir`, or ``None`` when none was set: the default
    ``logdir`` of a trainer's run (callbacks read ``self.trainer.logdir``)."""
    return logdir.current()


def path_in_logger_dir(path: str, needs_dir: str) -> str:
    """``path`` as an absolute path: as it is when absolute, else inside the log directory.

    Raises:
        ValueError: ``path`` is relative and no log directory is set; the message is
            ``needs_dir`` (what wanted the path, and the fix).

    Example:
        >>> path_in_logger_dir("hyper.txt", "HumanHyperParamSetter needs a log directory.")
    """
    return logdir.path_in(logdir.current(), path, needs_dir)


def unset_logger_dir() -> None:
    """Stop writing to the log file and give up the directory's lock (its files stay)."""
    _close_file_handler()
    logdir.release()


def __getattr__(name):
    """``logger.LOG_DIR``, tensorpack's module-level name for :func:`get_logger_dir`."""
    if name == "LOG_DIR":
        return get_logger_dir()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
