"""Trainers, the training configuration, and the main loop."""
from tfloop.callbacks.base import StopTraining
from tfloop.model_desc import ModelDesc, ModelDescBase
from tfloop.resume.preemption import SignalHandler
from tfloop.train.async_multigpu import AsyncMultiGPUTrainer
from tfloop.train.base import Trainer
from tfloop.train.callback_list import RunCallbacks
from tfloop.train.cluster import (
    ClusterError,
    ClusterTask,
    create_server,
    run_parameter_server,
    shard_dataset,
)
from tfloop.train.config import AutoResumeTrainConfig, TrainConfig, as_input_source
from tfloop.train.defaults import (
    DEFAULT_CALLBACKS,
    DEFAULT_MONITORS,
    default_callbacks,
    default_monitors,
)
from tfloop.train.distributed import (
    DistributedTrainerParameterServer,
    DistributedTrainerReplicated,
    trainer_from_tf_config,
)
from tfloop.train.error_policy import TrainingErrorPolicy
from tfloop.train.final_weights import FinalWeights
from tfloop.train.horovod import BytePSTrainer, HorovodTrainer
from tfloop.train.interface import launch_train_with_config
from tfloop.train.logdir import RunLogDir
from tfloop.train.loop import TrainLoop
from tfloop.train.multigpu import (
    SyncMultiGPUTrainer,
    SyncMultiGPUTrainerParameterServer,
    SyncMultiGPUTrainerReplicated,
)
from tfloop.train.options import RunOptions, TrainerOptions
from tfloop.train.run_state import RunResume, SavedCheckpoints
from tfloop.train.single_cost import QueueInputTrainer, SingleCostTrainer
from tfloop.train.tower import NoOpTrainer, SimpleTrainer, TowerTrainer

__all__ = [
    "StopTraining", "Trainer", "TrainConfig", "as_input_source", "default_callbacks",
    "default_monitors", "launch_train_with_config", "TrainLoop", "RunOptions",
    "RunCallbacks", "TrainerOptions", "RunLogDir", "SavedCheckpoints", "RunResume", "FinalWeights",
    "TrainingErrorPolicy",
    "NoOpTrainer", "SimpleTrainer",
    "TowerTrainer", "SignalHandler", "AutoResumeTrainConfig",
    "SyncMultiGPUTrainer", "SyncMultiGPUTrainerParameterServer", "SyncMultiGPUTrainerReplicated",
    "AsyncMultiGPUTrainer", "SingleCostTrainer", "QueueInputTrainer", "DEFAULT_CALLBACKS",
    "DEFAULT_MONITORS", "ModelDesc", "ModelDescBase",
    "ClusterError", "ClusterTask", "create_server", "run_parameter_server", "shard_dataset",
    "DistributedTrainerParameterServer", "DistributedTrainerReplicated", "trainer_from_tf_config",
    "HorovodTrainer", "BytePSTrainer",
]
