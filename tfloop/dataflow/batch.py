"""Batching: stacking datapoints into batches, optionally grouped by shape."""
from collections import defaultdict

import numpy as np

from tfloop.dataflow.base import DataFlowReentrantGuard, ProxyDataFlow
from tfloop.utils.checks import check_positive_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["BatchData", "BatchDataByShape"]


def _length_or_none(ds):
    try:
        return len(ds)
    except NotImplementedError:
        return None


class BatchData(ProxyDataFlow):
    """Stacks ``batch_size`` datapoints into one: each component gains a leading batch axis.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = BatchData(DataFromList([[i, 2 * i] for i in range(5)], shuffle=False), 2,
        ...                remainder=True)
        >>> df.reset_state(); [dp[0].tolist() for dp in df]
        [[0, 1], [2, 3], [4]]
    """

    def __init__(self, ds, batch_size, remainder=False, use_list=False):
        """
        Args:
            ds (DataFlow): produces lists or dicts; without ``use_list`` each component must be a
                scalar or an array of the same shape in every datapoint.
            batch_size (int): datapoints per batch.
            remainder (bool): also produce the last, smaller batch of a pass (needs an accurate
                ``len(ds)`` for ``len()``). If False every batch has ``batch_size`` datapoints.
            use_list (bool): make each component a list of the datapoints' values instead of an
                array.
        """
        super().__init__(ds)
        self.batch_size = check_positive_int(tensorpack_int(batch_size, "BatchData: batch_size"),
                                             "BatchData: batch_size")
        if not remainder:
            size = _length_or_none(ds)
            if size is not None and self.batch_size > size:
                raise ValueError(
                    f"BatchData: batch_size={batch_size} is larger than the DataFlow's length "
                    f"{size}, so no batch would ever be produced. Use a smaller batch_size or "
                    "remainder=True.")
        self.remainder = remainder
        self.use_list = use_list

    def __len__(self):
        full, rest = divmod(len(self.ds), self.batch_size)
        return full + int(self.remainder and rest > 0)

    def __iter__(self):
        holder = []
        for dp in self.ds:
            holder.append(dp)
            if len(holder) == self.batch_size:
                yield BatchData.aggregate_batch(holder, self.use_list)
                holder = []
        if self.remainder and holder:
            yield BatchData.aggregate_batch(holder, self.use_list)

    @staticmethod
    def _batch_numpy(values):
        first = values[0]
        if isinstance(first, bool):
            dtype = "bool"
        elif isinstance(first, int):
            dtype = "int32"
        elif isinstance(first, float):
            dtype = "float32"
        elif isinstance(first, (bytes, str)):
            dtype = "str"
        elif hasattr(first, "dtype"):
            dtype = first.dtype
        else:
            raise TypeError(f"BatchData cannot batch a component of type {type(first).__name__} "
                            f"({first!r}); use use_list=True to batch it as a list.")
        try:
            return np.asarray(values, dtype=dtype)
        except ValueError as e:
            shapes = sorted({np.shape(v) for v in values})
            raise ValueError(
                f"BatchData cannot stack components of different shapes {shapes} into one array; "
                "make them the same shape, use BatchDataByShape, or use_list=True.") from e

    @staticmethod
    def aggregate_batch(data_holder, use_list=False):
        """Combine a list of datapoints (lists or dicts) into one batched datapoint.

        Args:
            data_holder (list): the datapoints.
            use_list (bool): give each component as a list instead of an array.
        """
        first = data_holder[0]
        if isinstance(first, (list, tuple)):
            columns = [[dp[k] for dp in data_holder] for k in range(len(first))]
            return [c if use_list else BatchData._batch_numpy(c) for c in columns]
        if isinstance(first, dict):
            return {key: ([dp[key] for dp in data_holder] if use_list
                          else BatchData._batch_numpy([dp[key] for dp in data_holder]))
                    for key in first}
        raise TypeError(f"A datapoint must be a list, tuple or dict to be batched, got "
                        f"{type(first).__name__}: {first!r}.")


class BatchDataByShape(BatchData):
    """Batches datapoints whose component ``idx`` has the same shape (one pending batch per shape).

    Datapoints of a rare shape may never fill a batch, and are then never produced.

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import DataFromList
        >>> dps = [[np.zeros(n)] for n in (1, 2, 1, 2)]
        >>> df = BatchDataByShape(DataFromList(dps, shuffle=False), 2, idx=0)
        >>> df.reset_state(); [dp[0].shape for dp in df]
        [(2, 1), (2, 2)]
    """

    def __init__(self, ds, batch_size, idx):
        """
        Args:
            ds (DataFlow): produces datapoints whose ``dp[idx]`` is an array.
            batch_size (int): datapoints per batch.
            idx (int): the component whose shape groups datapoints.
        """
        super().__init__(ds, batch_size, remainder=False)
        self.idx = idx

    def reset_state(self):
        super().reset_state()
        self.holder = defaultdict(list)
        self._guard = DataFlowReentrantGuard()

    def __iter__(self):
        with self._guard:
            for dp in self.ds:
                holder = self.holder[np.shape(dp[self.idx])]
                holder.append(dp)
                if len(holder) == self.batch_size:
                    yield BatchData.aggregate_batch(holder)
                    del holder[:]
