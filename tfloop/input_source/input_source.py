"""tensorpack's ``input_source.input_source``: the input sources (those of :mod:`tfloop.input`),
``TFDatasetInput`` (tensorpack's name for an input from a ``tf.data.Dataset``), ``TensorInput``,
``PlaceholderInput`` and ``FeedfreeInput``.

Example:
    >>> from tfloop.input_source.input_source import QueueInput, TFDatasetInput
"""
from tfloop.input import *  # noqa: F401,F403
from tfloop.input import DatasetInput
from tfloop.input import __all__ as _INPUT_NAMES
from tfloop.input.remap import FeedfreeInput, PlaceholderInput
from tfloop.input.tensor_input import TensorInput

TFDatasetInput = DatasetInput

__all__ = list(_INPUT_NAMES) + ["TFDatasetInput", "TensorInput", "PlaceholderInput",
                                "FeedfreeInput"]
