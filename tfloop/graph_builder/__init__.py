"""tensorpack's ``graph_builder`` names: ``ModelDesc``, and the helpers custom multi-device
trainers use: :class:`DataParallelBuilder` (build a tower per device),
:class:`LeastLoadedDeviceSetter` (spread variables over devices) and :func:`allreduce_grads`.

Example:
    >>> from tfloop.graph_builder import DataParallelBuilder, LeastLoadedDeviceSetter
"""
from tfloop.graph_builder.training import DataParallelBuilder
from tfloop.graph_builder.utils import LeastLoadedDeviceSetter, allreduce_grads
from tfloop.model_desc import ModelDesc, ModelDescBase

__all__ = ["ModelDesc", "ModelDescBase", "DataParallelBuilder", "LeastLoadedDeviceSetter",
           "allreduce_grads"]
