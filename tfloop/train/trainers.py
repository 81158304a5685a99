"""tensorpack's ``train.trainers``: every trainer class, at tensorpack's path.

``BytePSTrainer`` needs BytePS, which does not build for the TensorFlow versions tfloop runs on;
using it raises an error naming the replacement.

Example:
    >>> from tfloop.train.trainers import SimpleTrainer, SyncMultiGPUTrainerReplicated
"""
from tfloop.train.async_multigpu import AsyncMultiGPUTrainer
from tfloop.train.distributed import (
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
)
from tfloop.train.multigpu import (
    SyncMultiGPUTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
)
from tfloop.train.single_cost import QueueInputTrainer
from tfloop.train.tower import NoOpTrainer, SimpleTrainer
from tfloop.utils.develop import unavailable

__all__ = ["NoOpTrainer", "SimpleTrainer", "QueueInputTrainer", "SyncMultiGPUTrainer",
           "SyncMultiGPUTrainerReplicated", "SyncMultiGPUTrainerParameterServer",
           "AsyncMultiGPUTrainer", "DistributedTrainerParameterServer",
           "DistributedTrainerReplicated", "BytePSTrainer"]

BytePSTrainer = unavailable(
    "BytePSTrainer", "it needs BytePS (byteps.tensorflow), which has no build for TensorFlow 2. "
    "Train on several machines with DistributedTrainerReplicated (all-reduce on TensorFlow's "
    "collective ops, set up from TF_CONFIG: trainer_from_tf_config()), or on one machine's "
    "GPUs with SyncMultiGPUTrainerReplicated.")
