"""tensorpack's module name for ``ModelDesc`` and ``ModelDescBase`` (tfloop builds data-parallel
graphs inside its trainers, see :mod:`tfloop.train.multigpu`, instead of separate builders).

Example:
    >>> from tfloop.graph_builder import ModelDesc
"""
from tfloop.model import ModelDesc, ModelDescBase

__all__ = ["ModelDesc", "ModelDescBase"]
