"""Python data pipelines (tensorpack's DataFlow): no TensorFlow needed.

A DataFlow is an iterable of datapoints (lists or dicts of components) with an optional
``__len__`` and a ``reset_state()`` called once before iterating. Compose them::

    from tfloop.dataflow import BatchData, MapData, MultiProcessRunnerZMQ, dataset
    df = BatchData(MapData(dataset.Mnist("train", dir="~/data/mnist"), augment), 128)
"""
from tfloop.dataflow import (base as _base, batch as _batch, combine as _combine,  # noqa: I001
                             common as _common, debug as _debug, image as _image,
                             parallel as _parallel, parallel_map as _parallel_map, raw as _raw,
                             remote as _remote, serialize as _serialize, hdf5 as _hdf5,
                             format as _format)
from tfloop.utils import rng as _rng
from tfloop.dataflow import dataset, imgaug  # noqa: F401
from tfloop.dataflow._workers import DataFlowWorkerError  # noqa: F401
from tfloop.utils.rng import *  # noqa: F401,F403
from tfloop.dataflow.base import *  # noqa: F401,F403
from tfloop.dataflow.raw import *  # noqa: F401,F403
from tfloop.dataflow.batch import *  # noqa: F401,F403
from tfloop.dataflow.common import *  # noqa: F401,F403
from tfloop.dataflow.combine import *  # noqa: F401,F403
from tfloop.dataflow.debug import *  # noqa: F401,F403
from tfloop.dataflow.parallel import *  # noqa: F401,F403
from tfloop.dataflow.parallel_map import *  # noqa: F401,F403
from tfloop.dataflow.remote import *  # noqa: F401,F403
from tfloop.dataflow.serialize import *  # noqa: F401,F403
from tfloop.dataflow.image import *  # noqa: F401,F403
from tfloop.dataflow.hdf5 import *  # noqa: F401,F403
from tfloop.dataflow.format import *  # noqa: F401,F403

# tensorpack's module paths hold some names twice (common.BatchData is batch.BatchData): once here
__all__ = list(dict.fromkeys(
    _rng.__all__ + _base.__all__ + _raw.__all__ + _batch.__all__ + _common.__all__
    + _combine.__all__ + _debug.__all__ + ["DataFlowWorkerError"] + _parallel.__all__
    + _parallel_map.__all__ + _remote.__all__ + _serialize.__all__ + _image.__all__
    + _hdf5.__all__ + _format.__all__ + ["dataset", "imgaug"]))
