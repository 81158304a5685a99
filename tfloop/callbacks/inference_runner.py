"""The inference runners, at tensorpack's path: :class:`InferenceRunner` (one tower,
:mod:`tfloop.callbacks.inference_loop`) and :class:`DataParallelInferenceRunner` (a tower per
device, :mod:`tfloop.callbacks.inference_parallel`).

Example:
    >>> from tfloop.callbacks.inference_runner import InferenceRunner
"""
from tfloop.callbacks.inference_loop import InferenceRunner, InferenceRunnerBase
from tfloop.callbacks.inference_parallel import DataParallelInferenceRunner

__all__ = ["InferenceRunnerBase", "InferenceRunner", "DataParallelInferenceRunner"]
