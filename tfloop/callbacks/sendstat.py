"""Running a command with the latest stats, e.g. to send them to a phone or a chat."""
import os
import shlex
import signal
import string
import subprocess

from tfloop.callbacks.base import Callback
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_number

__all__ = ["SendStat"]

_SHELL_OPERATORS = set("();<>|&")
_SHELL_EXPANSIONS = ("$", "`")
_MAX_LOGGED_CHARS = 2000


def _placeholders(command):
    try:
        return {field for _, field, _, _ in string.Formatter().parse(command) if field is not None}
    except ValueError as e:
        raise ValueError(f"SendStat command {command!r} is not a valid format string ({e}); write "
                         "a literal brace as {{ or }}.") from None


def needs_shell(command):
    """Whether ``command`` uses shell syntax: pipes, redirections, ``;``, ``&&``, ``||``, ``&``,
    subshells, ``$`` expansions or backquotes (outside quotes, for the operators)."""
    if any(ch in command for ch in _SHELL_EXPANSIONS):
        return True
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    return any(tok and set(tok) <= _SHELL_OPERATORS for tok in lexer)


def _tail(text):
    text = text.strip()
    return text if len(text) <= _MAX_LOGGED_CHARS else "..." + text[-_MAX_LOGGED_CHARS:]


class SendStat(Callback):
    """At each trigger, run a command filled in with the latest values of some stats.

    The command is a ``str.format`` template whose ``{name}`` placeholders are stat names (dashes
    are fine: ``{val-error-top1}``; format specs too: ``{val-error-top1:.4f}``); write a literal
    brace as ``{{`` or ``}}``. It runs directly (split with ``shlex``) unless it uses shell syntax
    -- pipes, redirections, ``;``, ``&&``, ``||``, ``&``, ``$`` or backquotes -- in which case it
    runs through ``/bin/sh``. Its stdout goes to the console; its stdin is empty.

    Training never stops because of the command: when a stat has not been put yet the command is
    skipped with a warning; a non-zero exit logs the exit code and stderr; a command running
    longer than ``timeout`` is killed (with its children) and logged.

    Args:
        command (str): the command template.
        names (str or list[str]): the stats the command uses; every placeholder must be one.
        timeout (float): seconds before the command is killed; None waits forever.

    Example:
        >>> SendStat('echo {val-error-top1} >> errors.txt', 'val-error-top1')
        >>> SendStat('notify-send "val error {val-error:.3f}"', ['val-error'])
    """

    def __init__(self, command, names, timeout=30):
        if not isinstance(command, str) or not command.strip():
            raise ValueError(f"SendStat needs a command string, got {command!r}.")
        if isinstance(names, str):
            names = [names]
        names = list(names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError("SendStat names must be stat names (a str or a list of str), got "
                             f"{names!r}.")
        unknown = sorted(_placeholders(command) - set(names))
        if unknown:
            raise ValueError(f"SendStat command {command!r} uses {unknown} which "
                             f"{'is' if len(unknown) == 1 else 'are'} not in names={names}; add "
                             "them to names or write literal braces as {{ }}.")
        check_positive_number(timeout, "SendStat timeout", allow_none=True, unit="seconds")
        try:
            self.use_shell = needs_shell(command)
        except ValueError as e:
            raise ValueError(f"SendStat command {command!r} cannot be split into arguments ({e}); "
                             "check its quotes.") from None
        self.command = command
        self.names = names
        self.timeout = timeout

    def _trigger(self):
        stats, missing = {}, []
        for name in self.names:
            try:
                stats[name] = self.trainer.monitors.get_latest(name)
            except KeyError:
                missing.append(name)
        if missing:
            logger.warning(f"SendStat: no value yet for {', '.join(missing)}; command not run at "
                           f"global step {self.global_step}.")
            return
        self.run_command(self.command.format_map(stats))

    def run_command(self, command):
        """Run a filled-in command; returns its exit code, or None when it did not finish."""
        args = command if self.use_shell else shlex.split(command)
        try:
            proc = subprocess.Popen(args, shell=self.use_shell, stdin=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as e:
            logger.error(f"SendStat: cannot run {command!r}: {e}")
            return None
        try:
            _, stderr = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _, stderr = proc.communicate()
            logger.error(f"SendStat: {command!r} did not finish within {self.timeout} s and was "
                         f"killed.{self._stderr_note(stderr)}")
            return None
        if proc.returncode != 0:
            logger.error(f"SendStat: {command!r} failed with exit code "
                         f"{proc.returncode}.{self._stderr_note(stderr)}")
        elif stderr and stderr.strip():
            logger.info(f"SendStat: {command!r} wrote to stderr: {_tail(stderr)}")
        return proc.returncode

    @staticmethod
    def _stderr_note(stderr):
        stderr = _tail(stderr or "")
        return f" stderr: {stderr}" if stderr else " (no stderr)"

    def __str__(self):
        return f"SendStat({self.command!r})"
