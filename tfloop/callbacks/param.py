"""Hyper-parameters and the callbacks that set them, at tensorpack's path: the parameters and the
setter base (:mod:`tfloop.callbacks.param_base`), the schedules
(:mod:`tfloop.callbacks.param_schedule`), the file-driven setter
(:mod:`tfloop.callbacks.param_human`) and the stat-driven one
(:mod:`tfloop.callbacks.param_stat`).

Example:
    >>> from tfloop.callbacks.param import ScheduledHyperParamSetter
"""
from tfloop.callbacks.param_base import GraphVarParam, HyperParam, HyperParamSetter, ObjAttrParam
from tfloop.callbacks.param_human import HumanHyperParamSetter
from tfloop.callbacks.param_schedule import HyperParamSetterWithFunc, ScheduledHyperParamSetter
from tfloop.callbacks.param_stat import StatMonitorParamSetter

__all__ = ["HyperParam", "GraphVarParam", "ObjAttrParam", "HyperParamSetter",
           "HumanHyperParamSetter", "HyperParamSetterWithFunc", "ScheduledHyperParamSetter",
           "StatMonitorParamSetter"]
