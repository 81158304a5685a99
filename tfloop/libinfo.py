"""tfloop's version, under tensorpack's module name (``libinfo.__version__``; ``__git_version__``,
which tensorpack's callbacks log, is the same)."""
from tfloop.version import __version__

__git_version__ = __version__

__all__ = ["__version__"]
