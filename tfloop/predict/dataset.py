"""The dataset predictors, at tensorpack's path: in this process
(:mod:`tfloop.predict.dataset_base`) and in worker processes
(:mod:`tfloop.predict.multiprocess`).

Example:
    >>> from tfloop.predict.dataset import SimpleDatasetPredictor
"""
from tfloop.predict.dataset_base import (
    DatasetPredictorBase,
    MultiTowerDatasetPredictor,
    SimpleDatasetPredictor,
)
from tfloop.predict.multiprocess import MultiProcessDatasetPredictor

__all__ = ["DatasetPredictorBase", "SimpleDatasetPredictor", "MultiTowerDatasetPredictor",
           "MultiProcessDatasetPredictor"]
