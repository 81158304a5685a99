"""tensorpack's ``models.utils``: ``VariableHolder`` (:mod:`tfloop.models.registry`)."""
from tfloop.models.registry import VariableHolder

__all__ = ["VariableHolder"]
