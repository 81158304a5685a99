"""Dataset predictors: run a predictor over every batch of a dataset, with callbacks."""
from typing import Any

import numpy as np
import tqdm

from tfloop.compat import tf
from tfloop.predict.callbacks import PredictCallback, StopPrediction
from tfloop.predict.config import PredictConfig
from tfloop.predict.multigpu import DataParallelOfflinePredictor, resolve_towers
from tfloop.predict.offline import OfflinePredictor, check_config
from tfloop.utils import logger

__all__ = ["DatasetPredictorBase", "SimpleDatasetPredictor", "MultiTowerDatasetPredictor"]


def _is_eager_dataset(dataset):
    return not hasattr(getattr(dataset, "_variant_tensor", None), "graph")


def _open(dataset, who):
    """``(iterable of batches, number of batches or None)`` of one pass over ``dataset``."""
    if callable(dataset) and not isinstance(dataset, tf.data.Dataset) and \
            not hasattr(dataset, "__iter__"):
        with tf.init_scope():
            dataset = dataset()
    if isinstance(dataset, tf.data.Dataset):
        if not _is_eager_dataset(dataset):
            raise ValueError(f"{who} got a tf.data.Dataset built inside a graph; build it eagerly "
                             "(outside any graph), or give the function that builds it.")
        cardinality = int(dataset.cardinality())
        if cardinality == tf.data.INFINITE_CARDINALITY:
            raise ValueError(f"{who} needs a finite dataset, but this one repeats forever; stop "
                             "it with .take(n) or StopPredictionAfter.")
        return dataset.as_numpy_iterator(), (cardinality if cardinality >= 0 else None)
    if hasattr(dataset, "reset_state"):
        dataset.reset_state()
    try:
        iter(dataset)
    except TypeError:
        raise TypeError(f"{who} needs a tf.data.Dataset, a function building one, or an iterable "
                        f"of batches; got {dataset!r}.") from None
    try:
        size = len(dataset)
    except (TypeError, NotImplementedError):
        size = None
    return dataset, size


class DatasetPredictorBase:
    """Base class of dataset predictors: :meth:`get_result` yields the outputs of each batch.

    Args:
        config (PredictConfig): the predictor's config.
        dataset: the data, one batch per element: an eager ``tf.data.Dataset`` (or a function
            that builds one), a DataFlow, or any iterable. A batch is a tuple/list of values in
            the order of ``config.input_names``, a dict keyed by those names, or one array for a
            single input.
        callbacks (list[PredictCallback]): hooks around the pass and each batch.

    Example:
        >>> for prob, in SimpleDatasetPredictor(config, test_dataset).get_result():
        ...     print(prob.argmax(1))
    """

    def __init__(self, config: PredictConfig, dataset: Any, callbacks: list | None = None) -> None:
        self.config = check_config(config, type(self).__name__)
        self.dataset = dataset
        callbacks = list(callbacks or [])
        for cb in callbacks:
            if not isinstance(cb, PredictCallback):
                raise TypeError(f"{type(self).__name__}: callbacks must be PredictCallback "
                                f"objects, got {cb!r}.")
        self.callbacks = callbacks

    def _batch_inputs(self, batch, index):
        names = self.config.input_names
        if isinstance(batch, dict):
            missing = [n for n in names if n not in batch]
            if missing:
                raise ValueError(f"{self}: batch {index} is a dict with keys {sorted(batch)}, "
                                 f"missing the inputs {missing}.")
            return [np.asarray(batch[n]) for n in names]
        if not isinstance(batch, (tuple, list)):
            batch = [batch]
        if len(batch) != len(names):
            raise ValueError(f"{self}: batch {index} has {len(batch)} component(s) but the "
                             f"predictor takes {len(names)} input(s) ({', '.join(names)}); set "
                             "input_names in the PredictConfig to what the data holds.")
        return [np.asarray(v) for v in batch]

    def get_result(self):
        """Yield the outputs (a list of arrays, in output order) of each batch, with a progress
        bar; the callbacks run around the pass and each batch. With the config's
        ``return_input``, yield ``(inputs, outputs)``."""
        batches, size = _open(self.dataset, str(self))
        for cb in self.callbacks:
            cb.predictor = self
            cb.before_predict()
        try:
            with tqdm.tqdm(total=size, desc=str(self), disable=None, dynamic_ncols=True,
                           leave=False) as bar:
                inputs = ([self._batch_inputs(b, i)] for i, b in enumerate(batches))
                index = 0
                for group in self._grouped(inputs):
                    self._before_batches(group, index)
                    for batch, outputs in zip(group, self._predict(group)):
                        stop = self._after_batch(batch, outputs, index)
                        index += 1
                        bar.update()
                        yield (batch, outputs) if self.config.return_input else outputs
                        if stop is not None:
                            logger.info(f"{self}: prediction stopped: {stop}")
                            return
        except StopPrediction as e:
            logger.info(f"{self}: prediction stopped: {e}")
        finally:
            for cb in self.callbacks:
                cb.after_predict()

    def _before_batches(self, group, first_index):
        for i, batch in enumerate(group):
            for cb in self.callbacks:
                cb.before_batch(batch, first_index + i)

    def _after_batch(self, batch, outputs, index):
        """Run every callback's ``after_batch``; returns the StopPrediction one raised, if any
        (the callbacks after it still run)."""
        stop = None
        for cb in self.callbacks:
            try:
                cb.after_batch(batch, outputs, index)
            except StopPrediction as e:
                stop = e
        return stop

    def get_all_result(self) -> list:
        """The outputs of every batch, as a list."""
        return list(self.get_result())

    def _grouped(self, one_batch_lists):
        """Batches to predict together (lists of batches)."""
        return one_batch_lists

    def _predict(self, group):
        raise TypeError(f"{type(self).__name__} must define _predict(group).")

    def __str__(self):
        return type(self).__name__


class SimpleDatasetPredictor(DatasetPredictorBase):
    """Predict every batch of a dataset with one :class:`OfflinePredictor`.

    Example:
        >>> collect = CollectOutputs()
        >>> SimpleDatasetPredictor(config, make_test_dataset, callbacks=[collect]).get_all_result()
        >>> prob, = collect.concatenated()
    """

    def __init__(self, config: PredictConfig, dataset: Any,
                 callbacks: list | None = None) -> None:
        super().__init__(config, dataset, callbacks)
        self.predictor = OfflinePredictor(config)

    def _predict(self, group):
        return [self.predictor._do_call(batch) for batch in group]


class MultiTowerDatasetPredictor(DatasetPredictorBase):
    """Predict consecutive batches in parallel, one per device, in one session call; outputs
    come in the order of the data.

    Args:
        config, dataset, callbacks: as for :class:`SimpleDatasetPredictor`.
        towers (list): GPU indices (logical CPU devices on a machine without GPUs) or device
            strings.

    Example:
        >>> predictor = MultiTowerDatasetPredictor(config, test_dataset, towers=[0, 1])
        >>> outputs = predictor.get_all_result()
    """

    def __init__(self, config: PredictConfig, dataset: Any, towers: list,
                 callbacks: list | None = None) -> None:
        super().__init__(config, dataset, callbacks)
        self.num_towers = len(resolve_towers(towers, type(self).__name__))
        self.predictor = DataParallelOfflinePredictor(config, towers)

    def _grouped(self, one_batch_lists):
        group = []
        for batch_list in one_batch_lists:
            group.extend(batch_list)
            if len(group) == self.num_towers:
                yield group
                group = []
        if group:
            yield group

    def _predict(self, group):
        # A short last group runs its last batch again on the idle towers; their outputs are
        # dropped.
        padded = group + [group[-1]] * (self.num_towers - len(group))
        outputs = self.predictor._do_call([value for batch in padded for value in batch])
        per_tower = len(self.config.output_names)
        return [outputs[i * per_tower:(i + 1) * per_tower] for i in range(len(group))]
