"""tensorpack's module name for the input sources: the names of :mod:`tfloop.input`, plus
``TFDatasetInput`` (tensorpack's name for an input from a ``tf.data.Dataset``) and
``TensorInput``, ``PlaceholderInput``, ``FeedfreeInput``, ``remap_input_source``.

Example:
    >>> from tfloop.input_source import QueueInput, TFDatasetInput
"""
from tfloop.input import *  # noqa: F401,F403
from tfloop.input import DatasetInput
from tfloop.input import __all__ as _INPUT_NAMES
from tfloop.input.remap import FeedfreeInput, PlaceholderInput, remap_input_source
from tfloop.input.tensor_input import TensorInput

TFDatasetInput = DatasetInput

__all__ = list(_INPUT_NAMES) + ["TFDatasetInput", "TensorInput", "PlaceholderInput",
                                "FeedfreeInput", "remap_input_source"]
