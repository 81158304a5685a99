"""tensorpack's ``callbacks.misc`` names, at its path: ``EstimatedTimeLeft``, ``InjectShell``,
``SendStat``."""
from tfloop.callbacks.debug import InjectShell
from tfloop.callbacks.sendstat import SendStat
from tfloop.callbacks.throughput import EstimatedTimeLeft

__all__ = ["EstimatedTimeLeft", "InjectShell", "SendStat"]
