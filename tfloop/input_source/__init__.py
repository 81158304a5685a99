"""tensorpack's module name for the input sources: the names of :mod:`tfloop.input`, plus
``TFDatasetInput`` (tensorpack's name for an input from a ``tf.data.Dataset``) and
``TensorInput``, ``PlaceholderInput``, ``FeedfreeInput``, ``remap_input_source``.

Example:
    >>> from tfloop.input_source import QueueInput, TFDatasetInput
"""
from tfloop.input_source.input_source import *  # noqa: F401,F403
from tfloop.input_source.input_source import __all__ as _SOURCE_NAMES
from tfloop.input_source.input_source_base import remap_input_source

__all__ = list(_SOURCE_NAMES) + ["remap_input_source"]
