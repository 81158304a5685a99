"""What monitors that write files share: finding their directory."""
import os
import weakref

from tfloop.monitors.base import MonitorBase
from tfloop.utils import files, logger

__all__ = ["LogDirMonitor"]

# Trainers already told that there is no log directory: the warning comes once per training run.
_WARNED_TRAINERS = weakref.WeakSet()


class LogDirMonitor(MonitorBase):
    """Base class of monitors that write files into a directory (the log directory by default).

    The directory is resolved in ``setup_graph``: ``logdir`` if given, else the run's log
    directory (``self.trainer.logdir``: given to the trainer, or ``logger.set_logger_dir``'s).
    When there is none, the monitor is skipped (its :attr:`logdir` stays ``None``) and one
    warning per training run names every skipped monitor. A URL (``gs://bucket/run``) is written
    through TensorFlow's file layer (:mod:`tfloop.utils.files`).

    Args:
        logdir (str): the directory to write into; created when missing.

    Example:
        >>> class TextLog(LogDirMonitor):
        ...     def process_scalar(self, name, value):
        ...         if self.logdir is not None:
        ...             with files.open_file(files.join(self.logdir, "scalars.txt"), "a") as f:
        ...                 f.write("{} {} {}\\n".format(self.global_step, name, value))
    """

    def __init__(self, logdir=None):
        if logdir is not None and not isinstance(logdir, (str, os.PathLike)):
            raise TypeError(f"{type(self).__name__}: logdir must be a path, got {logdir!r}.")
        self._logdir_arg = logdir
        self.logdir = None

    def resolve_logdir(self):
        """The directory this monitor would write into now, or None."""
        if self._logdir_arg is not None:
            return files.resolve(self._logdir_arg) if files.is_url(self._logdir_arg) else \
                os.fspath(self._logdir_arg)
        return self.trainer.logdir

    def _setup_graph(self):
        self.logdir = self.resolve_logdir()
        if self.logdir is None:
            self._warn_skipped()
        else:
            files.makedirs(self.logdir)

    def _warn_skipped(self):
        if self.trainer in _WARNED_TRAINERS:
            return
        _WARNED_TRAINERS.add(self.trainer)
        backends = self.trainer.monitors.backends
        # The run has no log directory: every file monitor without a logdir= of its own skips.
        skipped = [m for m in backends
                   if isinstance(m, LogDirMonitor) and m._logdir_arg is None] or [self]
        logger.warning(f"No log directory is set, so {', '.join(str(m) for m in skipped)} "
                       f"{'is' if len(skipped) == 1 else 'are'} skipped: call "
                       "tfloop.utils.logger.set_logger_dir(...) before training to write them.")
