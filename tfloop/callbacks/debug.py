"""Pausing training to look inside: an interactive shell opened by touching a file."""
import bdb
import importlib.util
import os
import pdb
import sys

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.utils import logger

__all__ = ["InjectShell"]

_SHELLS = ("ipython", "pdb")


def _have_ipython():
    if "IPython" in sys.modules:
        return sys.modules["IPython"] is not None
    return importlib.util.find_spec("IPython") is not None


class InjectShell(Callback):
    """Open an interactive shell at a trigger when a file exists; training resumes when it exits.

    At each trigger (every epoch by default; wrap it in ``PeriodicTrigger`` to check every k steps)
    the callback looks for ``file``. When it exists, the file is removed first, so touching it once
    opens exactly one shell, and then the shell opens with ``trainer`` and ``self`` (this callback)
    in scope. Leaving the shell in any way (``c``, ``q`` or Ctrl-D in pdb; ``exit`` in IPython)
    resumes training; call ``self.request_stop()`` in the shell to end training cleanly instead.
    Any copy of the file still there at the end of training is removed.

    Args:
        file (str): the file to watch. A relative path lives in the log directory when one is set
            (``logger.set_logger_dir``), else in the working directory. The full path is logged
            when training starts.
        shell (str): ``"ipython"`` (``IPython.embed``; when IPython is not installed, a warning at
            the start of training says so and pdb opens instead) or ``"pdb"``.

    Example:
        >>> callbacks = [PeriodicTrigger(InjectShell(shell="pdb"), every_k_steps=100)]
        >>> # later, from another terminal:  touch train_log/mnist/INJECT_SHELL.tmp
        >>> # (Pdb) p trainer.global_step
        >>> # (Pdb) c
    """

    def __init__(self, file="INJECT_SHELL.tmp", shell="ipython"):
        if not isinstance(file, (str, os.PathLike)) or not str(file):
            raise ValueError("InjectShell needs a file name, got {!r}.".format(file))
        if shell not in _SHELLS:
            raise ValueError("InjectShell shell must be one of {}, got {!r}.".format(_SHELLS, shell))
        self._file = os.fspath(file)
        self._shell = shell
        self.path = None
        self._stop_requested = False

    def _resolve_path(self):
        if os.path.isabs(self._file):
            return self._file
        log_dir = logger.get_logger_dir()
        return os.path.abspath(os.path.join(log_dir or os.getcwd(), self._file))

    def _before_train(self):
        self.path = self._resolve_path()
        if self._shell == "ipython" and not _have_ipython():
            logger.warning("InjectShell: IPython is not installed (pip install ipython); pdb will "
                           "open instead.")
            self._shell = "pdb"
        logger.info("InjectShell: create {} to open the {} shell at the next trigger.".format(
            self.path, self._shell))

    def _trigger(self):
        try:
            os.remove(self.path)
        except FileNotFoundError:
            return
        logger.info("InjectShell: found {} at global step {}: opening a {} shell with `trainer` and "
                    "`self` in scope; exit the shell to resume training.".format(
                        self.path, self.global_step, self._shell))
        try:
            self.open_shell()
        except bdb.BdbQuit:
            logger.info("InjectShell: pdb quit (call self.request_stop() in the shell to stop "
                        "training).")
        if self._stop_requested:
            raise StopTraining("requested from the InjectShell shell")
        logger.info("InjectShell: shell closed, training resumes.")

    def request_stop(self):
        """Call from the shell to end training (cleanly, with ``after_train``) once it exits."""
        self._stop_requested = True

    def open_shell(self):
        """Open the shell now, in a frame where ``trainer`` and ``self`` are local variables."""
        trainer = self.trainer  # noqa: F841  (in scope for the shell)
        if self._shell == "ipython":
            import IPython
            IPython.embed(header="tfloop InjectShell: `trainer` and `self` are available; exit to "
                                 "resume training.")
            return
        pdb.Pdb().set_trace()

    def _after_train(self):
        if self.path is not None and os.path.isfile(self.path):
            os.remove(self.path)

    def __str__(self):
        return "InjectShell({!r}, shell={!r})".format(self._file, self._shell)
