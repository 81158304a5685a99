"""Monitors: callbacks that receive scalars, images, summaries and events and write them somewhere."""
from tfloop.monitors.base import MonitorBase, Monitors, NoOpMonitor

__all__ = [
    "MonitorBase", "Monitors", "NoOpMonitor"
]
