"""Python data pipelines (tensorpack's DataFlow): no TensorFlow needed.

A DataFlow is an iterable of datapoints (lists or dicts of components) with an optional
``__len__`` and a ``reset_state()`` called once before iterating. Compose them::

    from tfloop.dataflow import BatchData, MapData, MultiProcessRunnerZMQ, dataset
    df = BatchData(MapData(dataset.Mnist("train", dir="~/data/mnist"), augment), 128)
"""
from tfloop.dataflow import base as _base
from tfloop.dataflow import combine as _combine
from tfloop.dataflow import common as _common
from tfloop.dataflow import dataset, imgaug
from tfloop.dataflow import debug as _debug
from tfloop.dataflow import image as _image
from tfloop.dataflow import parallel as _parallel
from tfloop.dataflow import parallel_map as _parallel_map
from tfloop.dataflow import raw as _raw
from tfloop.dataflow import rng as _rng
from tfloop.dataflow import serialize as _serialize
from tfloop.dataflow._workers import DataFlowWorkerError
from tfloop.dataflow.base import *
from tfloop.dataflow.combine import *
from tfloop.dataflow.common import *
from tfloop.dataflow.debug import *
from tfloop.dataflow.image import *
from tfloop.dataflow.parallel import *
from tfloop.dataflow.parallel_map import *
from tfloop.dataflow.raw import *
from tfloop.dataflow.rng import *
from tfloop.dataflow.serialize import *

__all__ = (_rng.__all__ + _base.__all__ + _raw.__all__ + _common.__all__ + _combine.__all__
           + _debug.__all__ + ["DataFlowWorkerError"] + _parallel.__all__ + _parallel_map.__all__
           + _serialize.__all__ + _image.__all__ + ["dataset", "imgaug"])
