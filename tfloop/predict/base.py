"""tensorpack's ``predict.base``: the predictor classes, :class:`PredictorBase`,
:class:`OnlinePredictor` (:mod:`tfloop.tfutils.predictor`) and :class:`OfflinePredictor`
(:mod:`tfloop.predict.offline`).

Example:
    >>> from tfloop.predict.base import OfflinePredictor
"""
from tfloop.predict.offline import OfflinePredictor
from tfloop.tfutils.predictor import OnlinePredictor, PredictorBase

__all__ = ["PredictorBase", "OnlinePredictor", "OfflinePredictor"]
