"""Prediction callbacks: hooks around a dataset predictor's pass and each of its batches.

The order of calls in one pass of :meth:`DatasetPredictorBase.get_result`::

    before_predict
    for each batch:
        before_batch(inputs)
        after_batch(inputs, outputs)
    after_predict            # always, also when the pass stopped early or failed

Raise :class:`StopPrediction` from a hook to end the pass cleanly after the current batch.
"""
import time

import numpy as np

from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int

__all__ = ["PredictCallback", "StopPrediction", "CollectOutputs", "PredictThroughput",
           "StopPredictionAfter"]


class StopPrediction(Exception):
    """Raised by a prediction callback to end the pass cleanly (``after_predict`` still runs)."""


class PredictCallback:
    """Base class of prediction callbacks: override the underscore methods.

    Attributes:
        predictor: the dataset predictor running the callback (set before ``before_predict``).
        batch_index (int): index of the current batch in the pass (from 0).

    Example:
        >>> class PrintShapes(PredictCallback):
        ...     def _after_batch(self, inputs, outputs):
        ...         print(self.batch_index, [o.shape for o in outputs])
    """

    predictor = None
    batch_index = -1

    def before_predict(self):
        """Called once before the first batch of a pass."""
        self.batch_index = -1
        self._before_predict()

    def before_batch(self, inputs, batch_index):
        """Called with a batch's inputs (numpy arrays, in input order) before it is predicted."""
        self.batch_index = batch_index
        self._before_batch(inputs)

    def after_batch(self, inputs, outputs, batch_index):
        """Called with a batch's inputs and outputs (numpy arrays, in output order)."""
        self.batch_index = batch_index
        self._after_batch(inputs, outputs)

    def after_predict(self):
        """Called once after the pass, also when it stopped early or failed."""
        self._after_predict()

    def _before_predict(self):
        pass

    def _before_batch(self, inputs):
        pass

    def _after_batch(self, inputs, outputs):
        pass

    def _after_predict(self):
        pass

    def __str__(self):
        return type(self).__name__


class CollectOutputs(PredictCallback):
    """Keep every batch's outputs; :meth:`concatenated` joins them along the batch axis.

    Example:
        >>> collect = CollectOutputs()
        >>> SimpleDatasetPredictor(config, batches, callbacks=[collect]).get_all_result()
        >>> prob, = collect.concatenated()
    """

    def _before_predict(self):
        self.outputs = []

    def _after_batch(self, inputs, outputs):
        self.outputs.append(list(outputs))

    def concatenated(self) -> list:
        """One array per output: the batches' values concatenated along axis 0."""
        if not self.outputs:
            raise ValueError("CollectOutputs has no outputs: the pass had no batch.")
        return [np.concatenate(parts, axis=0) for parts in zip(*self.outputs)]


class PredictThroughput(PredictCallback):
    """Measure batches, samples (the first input's leading dimension) and samples per second;
    logged at the end of the pass.

    Attributes:
        batches (int), samples (int), seconds (float), samples_per_second (float).

    Example:
        >>> speed = PredictThroughput()
        >>> SimpleDatasetPredictor(config, data, callbacks=[speed]).get_all_result()
        >>> speed.samples_per_second
    """

    def _before_predict(self):
        self.batches, self.samples, self.seconds = 0, 0, 0.0
        self.samples_per_second = float("nan")
        self._start = time.perf_counter()

    def _after_batch(self, inputs, outputs):
        self.batches += 1
        self.samples += int(np.shape(inputs[0])[0]) if np.ndim(inputs[0]) else 1

    def _after_predict(self):
        self.seconds = time.perf_counter() - self._start
        if self.seconds > 0:
            self.samples_per_second = self.samples / self.seconds
        logger.info(f"Prediction: {self.samples} samples in {self.batches} batches, "
                    f"{self.seconds:.3f} s, {self.samples_per_second:.1f} samples/s.")


class StopPredictionAfter(PredictCallback):
    """End the pass once ``batches`` batches (or ``samples`` samples) were predicted.

    Args:
        batches (int): stop after this many batches.
        samples (int): stop once at least this many samples (first input's rows) were predicted.

    Example:
        >>> SimpleDatasetPredictor(config, data, callbacks=[StopPredictionAfter(batches=10)])
    """

    def __init__(self, batches=None, samples=None):
        for name, value in (("batches", batches), ("samples", samples)):
            check_positive_int(value, f"StopPredictionAfter: {name}", allow_none=True)
        if batches is None and samples is None:
            raise ValueError("StopPredictionAfter needs batches= or samples=.")
        self.max_batches, self.max_samples = batches, samples

    def _before_predict(self):
        self._batches, self._samples = 0, 0

    def _after_batch(self, inputs, outputs):
        self._batches += 1
        self._samples += int(np.shape(inputs[0])[0]) if np.ndim(inputs[0]) else 1
        if self.max_batches is not None and self._batches >= self.max_batches:
            raise StopPrediction(f"{self._batches} batches predicted")
        if self.max_samples is not None and self._samples >= self.max_samples:
            raise StopPrediction(f"{self._samples} samples predicted")
