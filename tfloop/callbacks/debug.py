"""Pausing training to look inside: an interactive shell opened by touching a file."""
import bdb
import importlib.util
import os
import pdb
import stat
import sys

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.callbacks.shell_tools import CHEAT_SHEET, ShellTools
from tfloop.tfutils.common import NameFetchSession
from tfloop.utils import logger
from tfloop.utils.checks import check_one_of
from tfloop.utils.fs import display_path
from tfloop.utils.logdir import local_path_in

__all__ = ["InjectShell"]

_SHELLS = ("ipython", "pdb")


def stdin_is_terminal() -> bool:
    """Whether a person can type into this process: its stdin is a terminal."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _have_ipython():
    if "IPython" in sys.modules:
        return sys.modules["IPython"] is not None
    return importlib.util.find_spec("IPython") is not None


class InjectShell(Callback):
    """Open an interactive shell at a trigger when a file exists; training resumes when it exits.

    At each trigger (every epoch by default; wrap it in ``PeriodicTrigger`` to check every k steps)
    the callback looks for ``file``. When it exists, the file is removed first, so touching it once
    opens exactly one shell, and then the shell opens with ``trainer``, ``sess`` (the training
    session, fetching by name: ``sess.run("fc/W:0")`` gives the weights, not a TF2 resource
    handle) and ``self`` (this callback) in scope, and the tools of :class:`ShellTools`, which a
    four-line cheat sheet lists when the shell opens: ``get(name)`` (a variable's or tensor's
    value), ``set(name, value)`` (a variable or hyper-parameter, the learning rate included, from
    the next step on), ``stats()`` (the latest value of every stat) and ``stop()``. Leaving the
    shell in any way (``c``, ``q`` or Ctrl-D in pdb; ``exit`` in IPython) resumes training; call
    ``stop()`` in the shell to end training cleanly instead. Any copy of the file still there at
    the end of training is removed.

    A debugging aid never stops or blocks training: when stdin is not a terminal (a job runner, a
    pipe), no shell could be used, so none opens: the file is removed with a warning. Anything
    other than a regular file at the path (a directory, a FIFO) is left alone with a warning, and
    a file that cannot be removed (a read-only file system) is reported once and ignored.

    Args:
        file (str): the file to watch. A relative path lives in the log directory
            (``logger.set_logger_dir``); without a log directory give an absolute path (watching
            the working directory, e.g. ``/tmp``, would let anyone there pause the run). The full
            path is logged when training starts.
        shell (str): ``"ipython"`` (``IPython.embed``; when IPython is not installed, a warning at
            the start of training says so and pdb opens instead) or ``"pdb"``.

    Example:
        >>> callbacks = [PeriodicTrigger(InjectShell(shell="pdb"), every_k_steps=100)]
        >>> # later, from another terminal:  touch train_log/mnist/INJECT_SHELL.tmp
        >>> # (Pdb) p get('fc0/W').mean()
        >>> # (Pdb) set('learning_rate', 1e-4)
        >>> # (Pdb) c
    """

    def __init__(self, file="INJECT_SHELL.tmp", shell="ipython"):
        if not isinstance(file, (str, os.PathLike)) or not str(file):
            raise ValueError(f"InjectShell needs a file name, got {file!r}.")
        self._file = os.fspath(file)
        self._shell = check_one_of(shell, "InjectShell shell", _SHELLS)
        self.path = None
        self._stop_requested = False
        self._warned = set()

    def _resolve_path(self):
        return local_path_in(
            self.trainer.logdir, self._file,
            f"InjectShell watches {self._file!r} in the log directory, but no log directory is "
            "set: call logger.set_logger_dir(...) first, or give an absolute path, e.g. "
            "InjectShell(file='/home/me/INJECT_SHELL.tmp').", "InjectShell")

    def _setup_graph(self):
        self._resolve_path()

    def _warn_once(self, key, message):
        if key not in self._warned:
            self._warned.add(key)
            logger.warning("InjectShell: " + message)

    def _before_train(self):
        self._warned = set()
        self.path = self._resolve_path()
        if self._shell == "ipython" and not _have_ipython():
            logger.warning("InjectShell: IPython is not installed (pip install ipython); pdb will "
                           "open instead.")
            self._shell = "pdb"
        logger.info(f"InjectShell: create {display_path(self.path)} to open the {self._shell} "
                    "shell at the next trigger.")

    def _take_request(self):
        """Whether the file asks for a shell now; the file is consumed. Never raises."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            return False
        except OSError as e:
            self._warn_once("stat", f"cannot look at {self.path} ({e}); ignored.")
            return False
        if not stat.S_ISREG(mode):
            self._warn_once("kind", f"{self.path} is not a regular file (a directory, a FIFO ...); "
                            "it is ignored. Create a plain file to open a shell.")
            return False
        try:
            os.remove(self.path)
        except FileNotFoundError:
            return False
        except OSError as e:
            self._warn_once("remove", f"found {self.path} but cannot remove it ({e}), so no shell "
                            "opens (it would open again at every trigger).")
            return False
        if not stdin_is_terminal():
            self._warn_once("tty", f"found {self.path} at global step {self.global_step}, but "
                            "stdin is not a terminal, so no shell can be used; training goes on. "
                            "Run training in a terminal to use InjectShell.")
            return False
        return True

    def _trigger(self):
        if not self._take_request():
            return
        shell = {"ipython": "an IPython", "pdb": "a pdb"}[self._shell]
        logger.info(f"InjectShell: found {display_path(self.path)} at global step "
                    f"{self.global_step}: opening "
                    f"{shell} shell; exit it to resume training.")
        try:
            self.open_shell()
        except bdb.BdbQuit:
            logger.info("InjectShell: pdb quit (call stop() in the shell to stop training).")
        if self._stop_requested:
            raise StopTraining("requested from the InjectShell shell")
        logger.info("InjectShell: shell closed, training resumes.")

    def request_stop(self):
        """Call from the shell to end training (cleanly, with ``after_train``) once it exits."""
        self._stop_requested = True

    def open_shell(self):
        """Open the shell now, in a frame where ``trainer``, ``sess``, ``self`` and the tools of
        :class:`ShellTools` (``get``, ``set``, ``stats``, ``stop``) are local variables."""
        trainer = self.trainer  # noqa: F841  (the names below are in scope for the shell)
        sess = NameFetchSession(trainer.sess)  # noqa: F841  (sess.run("fc/W:0") gives the value)
        tools = ShellTools(self)
        get, set, stats, stop = tools.get, tools.set, tools.stats, tools.stop  # noqa: F841, A001
        header = f"tfloop InjectShell at global step {self.global_step}; exit to resume.\n" + \
            CHEAT_SHEET
        if self._shell == "ipython":
            import IPython
            IPython.embed(header=header)
            return
        print(header, file=sys.stdout, flush=True)
        pdb.Pdb().set_trace()

    def _after_train(self):
        if self.path is not None and os.path.isfile(self.path):
            try:
                os.remove(self.path)
            except OSError as e:
                self._warn_once("remove", f"cannot remove {self.path} ({e}).")

    def __str__(self):
        return f"InjectShell({self._file!r}, shell={self._shell!r})"
