"""Callbacks: everything that happens in training besides the training step."""
from tfloop.callbacks.base import Callback, CallbackFactory, ProxyCallback, StopTraining
from tfloop.callbacks.best_saver import MaxSaver, MinSaver
from tfloop.callbacks.concurrency import StartProcOrThread
from tfloop.callbacks.debug import InjectShell
from tfloop.callbacks.dump import DumpParamAsImage, DumpTensor, DumpTensorAsImage, DumpTensors
from tfloop.callbacks.early_stop import EarlyStopping
from tfloop.callbacks.flow import SkipUpdateWhen, StopEpoch
from tfloop.callbacks.graph import ProcessTensors, RunOp, RunUpdateOps
from tfloop.callbacks.group import Callbacks
from tfloop.callbacks.hooks import CallbackToHook, HookToCallback, TFLocalCLIDebugHook
from tfloop.callbacks.hparams import HyperParams
from tfloop.callbacks.inference import (
    BinaryClassificationStats,
    ClassificationError,
    Inferencer,
    ScalarStats,
)
from tfloop.callbacks.inference_loop import InferenceRunner, InferenceRunnerBase
from tfloop.callbacks.inference_parallel import DataParallelInferenceRunner
from tfloop.callbacks.keras_callback import KerasCallback
from tfloop.callbacks.memory import GPUMemoryTracker, HostMemoryTracker, PeakMemoryTracker
from tfloop.callbacks.model_saver import ModelSaver
from tfloop.callbacks.nan import CheckNumerics, NaNLossError, NonFiniteError, TerminateOnNaN
from tfloop.callbacks.optuna_pruning import OptunaPruningCallback
from tfloop.callbacks.param_base import GraphVarParam, HyperParam, HyperParamSetter, ObjAttrParam
from tfloop.callbacks.param_human import HumanHyperParamSetter
from tfloop.callbacks.param_schedule import HyperParamSetterWithFunc, ScheduledHyperParamSetter
from tfloop.callbacks.param_stat import StatMonitorParamSetter
from tfloop.callbacks.prof import GPUUtilizationTracker, GraphProfiler, TensorBoardProfiler
from tfloop.callbacks.progress import ProgressBar
from tfloop.callbacks.ray_report import RayReportCallback, ray_checkpoint_dir
from tfloop.callbacks.run_args import as_run_args
from tfloop.callbacks.schedule import Schedule
from tfloop.callbacks.sendstat import SendStat
from tfloop.callbacks.shell_tools import ShellTools
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.callbacks.steps import MaintainStepCounter
from tfloop.callbacks.summary import MergeAllSummaries, MovingAverageSummary, SimpleMovingAverage
from tfloop.callbacks.tb_summaries import TensorBoardSummaries
from tfloop.callbacks.tensor_printer import TensorPrinter
from tfloop.callbacks.throughput import EstimatedTimeLeft, ThroughputTracker
from tfloop.callbacks.timeout import SessionRunTimeout
from tfloop.callbacks.timing import CallbackTimeLogger
from tfloop.callbacks.trainer_view import TrainerView, expects_last_step
from tfloop.callbacks.trigger import EnableCallbackIf, PeriodicCallback, PeriodicTrigger
from tfloop.monitors import (
    CometMLMonitor,
    JSONWriter,
    MonitorBase,
    Monitors,
    ScalarPrinter,
    SendMonitorData,
    TFEventWriter,
)

__all__ = [
    "Callback", "CallbackFactory", "ProxyCallback", "StopTraining", "StopEpoch", "SkipUpdateWhen",
    "ShellTools",
    "ProcessTensors", "RunOp",
    "RunUpdateOps", "Callbacks", "CallbackToHook", "HookToCallback", "StatMonitorCallback",
    "MaintainStepCounter",
    "EnableCallbackIf", "PeriodicCallback", "PeriodicTrigger", "Schedule", "TrainerView",
    "expects_last_step",
    "Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats",
    "InferenceRunner", "InferenceRunnerBase", "DataParallelInferenceRunner",
    "HyperParam", "GraphVarParam", "ObjAttrParam", "HyperParamSetter", "ScheduledHyperParamSetter",
    "HyperParamSetterWithFunc", "HumanHyperParamSetter", "StatMonitorParamSetter",
    "ModelSaver", "MinSaver", "MaxSaver", "EarlyStopping", "TerminateOnNaN", "CheckNumerics",
    "NaNLossError", "NonFiniteError",
    "InjectShell", "DumpTensors", "DumpTensorAsImage", "HostMemoryTracker", "PeakMemoryTracker",
    "GPUMemoryTracker",
    "DumpTensor", "DumpParamAsImage", "StartProcOrThread", "SimpleMovingAverage", "TensorPrinter",
    "SessionRunTimeout", "TFLocalCLIDebugHook",
    "GPUUtilizationTracker", "GraphProfiler", "SendStat", "CallbackTimeLogger",
    "ProgressBar", "MergeAllSummaries", "MovingAverageSummary", "EstimatedTimeLeft",
    "ThroughputTracker", "as_run_args", "OptunaPruningCallback", "RayReportCallback",
    "ray_checkpoint_dir", "KerasCallback",
    "HyperParams", "TensorBoardSummaries", "TensorBoardProfiler",
    "CometMLMonitor", "JSONWriter", "MonitorBase", "Monitors", "ScalarPrinter", "SendMonitorData",
    "TFEventWriter",
]
