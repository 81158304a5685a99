"""tfloop's version, under tensorpack's module name (``libinfo.__version__``)."""
from tfloop.version import __version__

__all__ = ["__version__"]
