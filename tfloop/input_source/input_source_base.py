"""tensorpack's ``input_source.input_source_base``: :class:`InputSource` and
:func:`remap_input_source`."""
from tfloop.input.base import InputSource
from tfloop.input.remap import remap_input_source

__all__ = ["InputSource", "remap_input_source"]
