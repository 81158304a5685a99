"""tensorpack's older module name for :mod:`tfloop.utils.serialize` (``loads``, ``dumps``)."""
from tfloop.utils.serialize import dumps, loads

__all__ = ["dumps", "loads"]
