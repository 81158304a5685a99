"""tensorpack's ``train.trainers``: every trainer class, at tensorpack's path.

``HorovodTrainer`` and ``BytePSTrainer`` keep their model, one process per device, on
TensorFlow's collective all-reduce (:mod:`tfloop.train.horovod`).

Example:
    >>> from tfloop.train.trainers import SimpleTrainer, SyncMultiGPUTrainerReplicated
"""
from tfloop.train.async_multigpu import AsyncMultiGPUTrainer
from tfloop.train.distributed import (
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
)
from tfloop.train.horovod import BytePSTrainer, HorovodTrainer
from tfloop.train.multigpu import (
    SyncMultiGPUTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
)
from tfloop.train.single_cost import QueueInputTrainer
from tfloop.train.tower import NoOpTrainer, SimpleTrainer

__all__ = ["NoOpTrainer", "SimpleTrainer", "QueueInputTrainer", "SyncMultiGPUTrainer",
           "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
           "AsyncMultiGPUTrainer", "DistributedTrainerParameterServer",
           "DistributedTrainerReplicated", "HorovodTrainer", "BytePSTrainer"]
