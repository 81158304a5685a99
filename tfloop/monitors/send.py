"""SendMonitorData: run a command with scalars as soon as all of them have been put."""
from tfloop.callbacks.sendstat import SendStat
from tfloop.monitors.base import MonitorBase

__all__ = ["SendMonitorData"]


class SendMonitorData(MonitorBase):
    """Run a command filled in with some scalars once every one of them has been put since the
    last run (checked after each step and at each trigger).

    The command is a template as in :class:`~tfloop.callbacks.SendStat` (``{name}`` placeholders,
    shell syntax allowed); a failing or hanging command is logged, never stops training.

    Args:
        command (str): the command template.
        names (str or list[str]): the scalars it uses.
        timeout (float): seconds before the command is killed; None waits forever.

    Example:
        >>> monitors = [SendMonitorData("echo {val-error} >> errors.txt", "val-error")]
    """

    def __init__(self, command, names, timeout=30):
        self._sender = SendStat(command, names, timeout)
        self.command = self._sender.command
        self.names = self._sender.names
        self._received = {}

    def process_scalar(self, name, value):
        if name in self.names:
            self._received[name] = value

    def _trigger_step(self):
        self._trigger()

    def _trigger(self):
        if any(name not in self._received for name in self.names):
            return
        values, self._received = self._received, {}
        self._sender.run_command(self.command.format_map(values))

    def __str__(self):
        return f"SendMonitorData({self.command!r})"
