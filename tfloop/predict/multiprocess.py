"""MultiProcessDatasetPredictor: a dataset predicted by worker processes, each with a predictor."""
import multiprocessing
import os
import pickle
import queue
import weakref

from tfloop.compat import tf
from tfloop.predict.dataset_base import DatasetPredictorBase
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int

__all__ = ["MultiProcessDatasetPredictor"]

_POLL_S = 1.0


def _worker(config_bytes, tasks, results):
    """A worker process: one OfflinePredictor, then (index, inputs) -> (index, outputs)."""
    from tfloop.predict.offline import OfflinePredictor
    try:
        predictor = OfflinePredictor(pickle.loads(config_bytes))
    except Exception as e:  # reported to the parent, which raises it
        results.put(("failed", f"{type(e).__name__}: {e}"))
        return
    results.put(("ready", None))
    while True:
        task = tasks.get()
        if task is None:
            return
        index, inputs = task
        try:
            results.put((index, predictor._do_call(inputs)))
        except Exception as e:  # the batch's error goes back to the parent
            results.put((index, RuntimeError(f"{type(e).__name__}: {e}")))


def _stop(processes, tasks):
    for _ in processes:
        tasks.put(None)
    for p in processes:
        p.join(timeout=10)
        if p.is_alive():
            p.terminate()


class MultiProcessDatasetPredictor(DatasetPredictorBase):
    """Predict a dataset with ``nr_proc`` worker processes, each building its own
    :class:`OfflinePredictor` from the config; outputs come in the order of the data.

    The workers are started (with ``spawn``: each imports TensorFlow itself) at the first pass and
    kept for later passes until :meth:`close`. The config is sent to them pickled: its model must
    be an instance of a class importable from a module, and ``session_init`` a path, a dict or an
    unused SessionInit.

    Args:
        config (PredictConfig): the predictor's config.
        dataset: as for :class:`SimpleDatasetPredictor`.
        nr_proc (int): worker processes.
        use_gpu (bool): one GPU per worker (``CUDA_VISIBLE_DEVICES``); without GPUs the workers
            run on the CPU (logged). False: CPU only.
        ordered (bool): accepted for tensorpack compatibility; outputs are always in data order.
        callbacks (list[PredictCallback]): hooks around the pass and each batch.

    Example:
        >>> predictor = MultiProcessDatasetPredictor(config, batches, nr_proc=4)
        >>> outputs = predictor.get_all_result()
        >>> predictor.close()
    """

    def __init__(self, config, dataset, nr_proc: int, use_gpu: bool = True, ordered: bool = True,
                 callbacks: list | None = None):
        super().__init__(config, dataset, callbacks)
        check_positive_int(nr_proc, "MultiProcessDatasetPredictor: nr_proc")
        try:
            self._config_bytes = pickle.dumps(config)
        except (pickle.PicklingError, TypeError, AttributeError) as e:
            raise TypeError("MultiProcessDatasetPredictor sends the PredictConfig to its workers "
                            f"pickled, which failed: {e}. Define the model's class in a module, "
                            "and give session_init as a path or a dict.") from None
        self.nr_proc = nr_proc
        self.ordered = bool(ordered)
        self._gpus = self._worker_gpus(use_gpu)
        self._processes = []
        self._finalizer = None

    def _worker_gpus(self, use_gpu):
        if not use_gpu:
            return ["-1"] * self.nr_proc
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        gpus = [g for g in visible.split(",") if g] if visible is not None else \
            [str(i) for i in range(len(tf.config.list_physical_devices("GPU")))]
        if not gpus:
            logger.info("MultiProcessDatasetPredictor: no GPU, the workers run on the CPU.")
            return ["-1"] * self.nr_proc
        if len(gpus) < self.nr_proc:
            raise ValueError(f"MultiProcessDatasetPredictor: nr_proc={self.nr_proc} workers with "
                             f"a GPU each, but only {len(gpus)} GPU(s) are visible: lower nr_proc "
                             "or pass use_gpu=False.")
        return gpus[:self.nr_proc]

    def _start(self):
        context = multiprocessing.get_context("spawn")
        self._tasks, self._results = context.Queue(), context.Queue()
        saved = os.environ.get("CUDA_VISIBLE_DEVICES")
        try:
            for gpu in self._gpus:
                os.environ["CUDA_VISIBLE_DEVICES"] = gpu
                p = context.Process(target=_worker, daemon=True,
                                    args=(self._config_bytes, self._tasks, self._results))
                p.start()
                self._processes.append(p)
        finally:
            if saved is None:
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            else:
                os.environ["CUDA_VISIBLE_DEVICES"] = saved
        self._finalizer = weakref.finalize(self, _stop, list(self._processes), self._tasks)
        for _ in self._processes:
            kind, message = self._next_result()
            if kind == "failed":
                self.close()
                raise RuntimeError(f"{self}: a worker could not build its predictor: {message}")
        logger.info(f"{self}: {self.nr_proc} worker(s) ready.")

    def _next_result(self):
        while True:
            try:
                return self._results.get(timeout=_POLL_S)
            except queue.Empty:
                dead = [p for p in self._processes if not p.is_alive()]
                if dead:
                    codes = [p.exitcode for p in dead]
                    self.close()
                    raise RuntimeError(f"{self}: {len(dead)} worker process(es) died (exit codes "
                                       f"{codes}).") from None

    def close(self) -> None:
        """Stop the worker processes (they are started again by the next pass)."""
        if self._finalizer is not None:
            self._finalizer()
            self._finalizer = None
        self._processes = []

    def _grouped(self, one_batch_lists):
        group = []
        for batch_list in one_batch_lists:
            group.extend(batch_list)
            if len(group) == 2 * self.nr_proc:
                yield group
                group = []
        if group:
            yield group

    def _predict(self, group):
        if not self._processes:
            self._start()
        for index, batch in enumerate(group):
            self._tasks.put((index, batch))
        outputs = {}
        while len(outputs) < len(group):
            index, result = self._next_result()
            outputs[index] = result
        for index in range(len(group)):
            if isinstance(outputs[index], Exception):
                raise outputs[index]
        return [outputs[i] for i in range(len(group))]
