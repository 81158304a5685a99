"""Asynchronous prediction: single examples queued, batched by worker threads, answered by
futures."""
import queue
import threading
from concurrent.futures import Future

import numpy as np

from tfloop.tfutils.predictor import PredictorBase
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int

__all__ = ["AsyncPredictorBase", "MultiThreadAsyncPredictor"]

_STOP = object()


class AsyncPredictorBase(PredictorBase):
    """Base class of asynchronous predictors: :meth:`put_task` queues a datapoint and returns a
    ``concurrent.futures.Future`` of its outputs; calling the predictor waits for that future.

    Example:
        >>> future = async_predictor.put_task([image])
        >>> prob, = future.result()
    """

    def put_task(self, dp, callback=None) -> Future:
        """Queue one datapoint; ``callback(outputs)`` runs when it is done.

        Returns:
            concurrent.futures.Future: resolves to the list of outputs.
        """
        raise TypeError(f"{type(self).__name__} must define put_task(dp, callback=None).")

    def start(self) -> None:
        """Start the workers (call once, before the first task)."""

    def _do_call(self, dp):
        return self.put_task(dp).result()


class MultiThreadAsyncPredictor(AsyncPredictorBase):
    """Worker threads, one per predictor, that take queued single examples, stack up to
    ``batch_size`` of them into one batch, predict it, and resolve each example's future with its
    own row of every output.

    A datapoint is one example: one value per input, without the batch dimension. Errors of a
    batch are set on the futures of its examples; the workers keep running.

    Args:
        predictors (list[OnlinePredictor]): e.g. the predictors of a
            ``MultiTowerOfflinePredictor``, or one thread-safe predictor several times.
        batch_size (int): the most examples predicted together.

    Example:
        >>> async_pred = MultiThreadAsyncPredictor(multi.get_predictors(), batch_size=16)
        >>> async_pred.start()
        >>> futures = [async_pred.put_task([x]) for x in images]
        >>> probs = [f.result()[0] for f in futures]
        >>> async_pred.stop()
    """

    def __init__(self, predictors: list, batch_size: int = 5):
        predictors = list(predictors)
        if not predictors or not all(isinstance(p, PredictorBase) for p in predictors):
            raise TypeError(f"MultiThreadAsyncPredictor needs a non-empty list of predictors, got "
                            f"{predictors!r}.")
        self.predictors = predictors
        self.batch_size = check_positive_int(batch_size, "MultiThreadAsyncPredictor: batch_size")
        self._tasks = queue.Queue()
        self._threads = [threading.Thread(target=self._work, args=(p,), daemon=True,
                                          name=f"MultiThreadAsyncPredictor-{i}")
                         for i, p in enumerate(predictors)]
        self._started = False

    def start(self):
        if self._started:
            raise RuntimeError("MultiThreadAsyncPredictor was already started.")
        self._started = True
        for t in self._threads:
            t.start()

    def stop(self) -> None:
        """Let the workers finish the queued tasks, then end them."""
        for _ in self._threads:
            self._tasks.put(_STOP)
        for t in self._threads:
            t.join()

    def put_task(self, dp, callback=None) -> Future:
        if not self._started:
            raise RuntimeError("MultiThreadAsyncPredictor: call start() before put_task().")
        future = Future()
        if callback is not None:
            future.add_done_callback(lambda f: f.exception() is None and callback(f.result()))
        self._tasks.put((list(dp), future))
        return future

    def _take_batch(self):
        first = self._tasks.get()
        if first is _STOP:
            return None
        batch = [first]
        while len(batch) < self.batch_size:
            try:
                task = self._tasks.get_nowait()
            except queue.Empty:
                break
            if task is _STOP:
                self._tasks.put(_STOP)
                break
            batch.append(task)
        return batch

    def _work(self, predictor):
        while True:
            batch = self._take_batch()
            if batch is None:
                return
            futures = [f for _, f in batch]
            try:
                inputs = [np.stack(values) for values in zip(*(dp for dp, _ in batch))]
                outputs = predictor._do_call(inputs)
            except Exception as e:  # every waiting caller gets the error of its batch
                logger.warning(f"MultiThreadAsyncPredictor: a batch of {len(batch)} failed: "
                               f"{type(e).__name__}: {e}")
                for f in futures:
                    f.set_exception(e)
                continue
            for i, f in enumerate(futures):
                f.set_result([out[i] for out in outputs])
