"""Callbacks: everything that happens in training besides the training step."""
from tfloop.callbacks.base import Callback, CallbackFactory, ProxyCallback, StopTraining
from tfloop.callbacks.graph import ProcessTensors, RunOp, RunUpdateOps
from tfloop.callbacks.group import Callbacks
from tfloop.callbacks.hooks import CallbackToHook, HookToCallback
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.callbacks.steps import MaintainStepCounter
from tfloop.callbacks.trigger import EnableCallbackIf, PeriodicCallback, PeriodicTrigger

__all__ = [
    "Callback", "CallbackFactory", "ProxyCallback", "StopTraining", "ProcessTensors", "RunOp",
    "RunUpdateOps", "Callbacks", "CallbackToHook", "HookToCallback", "StatMonitorCallback", "MaintainStepCounter",
    "EnableCallbackIf", "PeriodicCallback", "PeriodicTrigger"
]
