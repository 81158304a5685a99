"""Prediction: predictors from a checkpoint or a running trainer, dataset predictors, callbacks."""
from tfloop.predict.callbacks import (
    CollectOutputs,
    PredictCallback,
    PredictThroughput,
    StopPrediction,
    StopPredictionAfter,
)
from tfloop.predict.concurrency import AsyncPredictorBase, MultiThreadAsyncPredictor
from tfloop.predict.config import PredictConfig
from tfloop.predict.dataset_base import (
    DatasetPredictorBase,
    MultiTowerDatasetPredictor,
    SimpleDatasetPredictor,
)
from tfloop.predict.feedfree import FeedfreePredictor
from tfloop.predict.multigpu import DataParallelOfflinePredictor, MultiTowerOfflinePredictor
from tfloop.predict.multiprocess import MultiProcessDatasetPredictor
from tfloop.predict.offline import OfflinePredictor
from tfloop.tfutils.export import ModelExporter
from tfloop.tfutils.predictor import OnlinePredictor, PredictorBase
from tfloop.tfutils.serving_module import ServingModule

__all__ = [
    "PredictCallback", "StopPrediction", "CollectOutputs", "PredictThroughput",
    "StopPredictionAfter", "PredictConfig", "DatasetPredictorBase", "SimpleDatasetPredictor",
    "MultiTowerDatasetPredictor", "DataParallelOfflinePredictor", "MultiTowerOfflinePredictor",
    "OfflinePredictor", "ModelExporter", "OnlinePredictor", "PredictorBase", "AsyncPredictorBase",
    "MultiThreadAsyncPredictor", "FeedfreePredictor", "MultiProcessDatasetPredictor",
    "ServingModule",
]
