"""tensorpack's ``callbacks.monitor``: the monitor backends, at tensorpack's path. They live in
:mod:`tfloop.monitors`; ``from tfloop.callbacks import *`` brings them too, as tensorpack's does.

Example:
    >>> from tfloop.callbacks.monitor import JSONWriter, ScalarPrinter
"""
from tfloop.monitors import (
    CometMLMonitor,
    JSONWriter,
    MonitorBase,
    Monitors,
    ScalarPrinter,
    SendMonitorData,
    TFEventWriter,
)

__all__ = ["CometMLMonitor", "JSONWriter", "MonitorBase", "Monitors", "ScalarPrinter",
           "SendMonitorData", "TFEventWriter"]
