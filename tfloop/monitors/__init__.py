"""Monitors: callbacks that receive scalars, images, summaries and events and write them out."""
from tfloop.monitors.base import MonitorBase, Monitors, NoOpMonitor
from tfloop.monitors.cometml import CometMLMonitor
from tfloop.monitors.csv_writer import CSVWriter
from tfloop.monitors.json_writer import JSONWriter
from tfloop.monitors.logdir import LogDirMonitor
from tfloop.monitors.mlflow_monitor import MLflowMonitor
from tfloop.monitors.printer import ScalarPrinter
from tfloop.monitors.records import RecordMonitor
from tfloop.monitors.send import SendMonitorData
from tfloop.monitors.tfevent import TFEventWriter
from tfloop.monitors.wandb_monitor import WandbMonitor

__all__ = [
    "MonitorBase", "Monitors", "NoOpMonitor",
    "CSVWriter", "JSONWriter", "LogDirMonitor", "ScalarPrinter", "RecordMonitor", "TFEventWriter",
    "SendMonitorData", "CometMLMonitor", "MLflowMonitor", "WandbMonitor",
]
