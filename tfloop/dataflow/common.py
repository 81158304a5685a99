"""DataFlows that reshape a stream: mapping, selecting, repeating, caching, shuffling."""
import itertools
from collections import deque
from copy import copy

from tfloop.dataflow.base import DataFlowReentrantGuard, NoLength, ProxyDataFlow, RNGDataFlow
from tfloop.dataflow.batch import BatchData, BatchDataByShape
from tfloop.dataflow.combine import ConcatData, JoinData, RandomChooseData, RandomMixData
from tfloop.dataflow.debug import PrintData, TestDataSpeed
from tfloop.utils.checks import check_callable, check_int, check_positive_int
from tfloop.utils.coerce import tensorpack_int, tensorpack_keywords
from tfloop.utils.rng import get_rng

__all__ = ["FixedSizeData", "MapData", "MapDataComponent", "SelectComponent", "RepeatedData",
           "RepeatedDataPoint", "LocallyShuffleData", "CacheData",
           # defined in batch.py, combine.py and debug.py; tensorpack has them here
           "BatchData", "BatchDataByShape", "ConcatData", "JoinData", "RandomChooseData",
           "RandomMixData", "PrintData", "TestDataSpeed"]


class FixedSizeData(ProxyDataFlow):
    """Exactly ``size`` datapoints per pass, restarting ``ds`` whenever it runs out.

    With ``keep_state=True`` the next pass continues where the last stopped in ``ds``
    (``ds``: 1..5, size 3 gives 1,2,3; 4,5,1; ...); otherwise every pass starts over.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = FixedSizeData(DataFromList([[1], [2]], shuffle=False), 3)
        >>> df.reset_state(); list(df)
        [[1], [2], [1]]
    """

    def __init__(self, ds, size, keep_state=True):
        """
        Args:
            ds (DataFlow): the input.
            size (int): datapoints per pass.
            keep_state (bool): continue the iteration of ``ds`` across passes.
        """
        super().__init__(ds)
        self._size = check_positive_int(tensorpack_int(size, "FixedSizeData: size"),
                                        "FixedSizeData: size")
        self.itr = None
        self._keep = keep_state
        self._guard = DataFlowReentrantGuard()

    def __len__(self):
        return self._size

    def reset_state(self):
        super().reset_state()
        self.itr = None
        self._guard = DataFlowReentrantGuard()

    def __iter__(self):
        with self._guard:
            if self.itr is None:
                self.itr = iter(self.ds)
            for _ in range(self._size):
                try:
                    dp = next(self.itr)
                except StopIteration:
                    self.itr = iter(self.ds)
                    try:
                        dp = next(self.itr)
                    except StopIteration:
                        raise ValueError("FixedSizeData: the input DataFlow produced no "
                                         "datapoint at all.") from None
                yield dp
            if not self._keep:
                self.itr = None


class MapData(ProxyDataFlow):
    """Applies ``func`` to every datapoint; datapoints for which it returns None are dropped.

    ``func`` gets a shallow copy of the datapoint. Dropping datapoints makes ``len()`` inexact.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = MapData(DataFromList([[1], [2], [3]], shuffle=False),
        ...              lambda dp: None if dp[0] == 2 else [dp[0] * 10])
        >>> df.reset_state(); list(df)
        [[10], [30]]
    """

    def __init__(self, ds, func):
        """
        Args:
            ds (DataFlow): the input.
            func: datapoint -> datapoint, or None to drop it.
        """
        super().__init__(ds)
        check_callable(func, f"{type(self).__name__}: func")
        self.func = func

    def __iter__(self):
        for dp in self.ds:
            ret = self.func(copy(dp))
            if ret is not None:
                yield ret


class MapDataComponent(MapData):
    """Applies ``func`` to one component (``dp[index]``); None drops the datapoint.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = MapDataComponent(DataFromList([[1, 'a']], shuffle=False), lambda x: x + 1, 0)
        >>> df.reset_state(); list(df)
        [[2, 'a']]
    """

    def __init__(self, ds, func, index=0):
        """
        Args:
            ds (DataFlow): produces lists or dicts.
            func: component -> new component, or None to drop the datapoint.
            index (int or str): index or key of the component.
        """
        check_callable(func, f"{type(self).__name__}: func")
        self._index = index
        self._func = func
        super().__init__(ds, self._mapper)

    def _mapper(self, dp):
        value = self._func(dp[self._index])
        if value is None:
            return None
        dp = list(dp) if isinstance(dp, tuple) else copy(dp)
        dp[self._index] = value
        return dp


def SelectComponent(ds, idxs):
    """Keep (and reorder) the components ``idxs`` of every datapoint: ``[c1, c2, c3]`` with
    ``idxs=[2, 1]`` becomes ``[c3, c2]``.

    Args:
        ds (DataFlow): the input.
        idxs (list[int] or list[str]): indices or keys of the components to keep.
    """
    idxs = list(idxs)
    return MapData(ds, lambda dp: [dp[i] for i in idxs])


class RepeatedData(ProxyDataFlow):
    """``ds`` passed through ``num`` times in a row (``num=-1``: forever).

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = RepeatedData(DataFromList([[1], [2]], shuffle=False), 2)
        >>> df.reset_state(); list(df)
        [[1], [2], [1], [2]]
    """

    @tensorpack_keywords(nr="num")
    def __init__(self, ds, num):
        """
        Args:
            ds (DataFlow): the input.
            num (int): number of passes, or -1 for an infinite stream.
        """
        if num != -1:
            check_int(num, "RepeatedData: num", at_least=1, note="or -1 for forever")
        self.num = num
        super().__init__(ds)

    def __len__(self):
        if self.num == -1:
            raise NoLength("RepeatedData(num=-1) is infinite and has no length.")
        return len(self.ds) * self.num

    def __iter__(self):
        passes = itertools.count() if self.num == -1 else range(self.num)
        for _ in passes:
            yield from self.ds


class RepeatedDataPoint(ProxyDataFlow):
    """Every datapoint of ``ds`` produced ``num`` times in a row.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = RepeatedDataPoint(DataFromList([[1], [2]], shuffle=False), 2)
        >>> df.reset_state(); list(df)
        [[1], [1], [2], [2]]
    """

    @tensorpack_keywords(nr="num")
    def __init__(self, ds, num):
        """
        Args:
            ds (DataFlow): the input.
            num (int): times to repeat each datapoint.
        """
        self.num = check_positive_int(tensorpack_int(num, "RepeatedDataPoint: num"),
                                      "RepeatedDataPoint: num")
        super().__init__(ds)

    def __len__(self):
        return len(self.ds) * self.num

    def __iter__(self):
        for dp in self.ds:
            for _ in range(self.num):
                yield dp


class LocallyShuffleData(ProxyDataFlow, RNGDataFlow):
    """Shuffles within a sliding buffer: for sources too large (or too sequential) to shuffle.

    Datapoints of ``ds`` (each put ``num_reuse`` times) enter a FIFO buffer of ``buffer_size``;
    once full, each new one pushes the oldest out, and the buffer is shuffled every
    ``shuffle_interval`` datapoints taken from ``ds``. The stream is infinite (passes of ``ds``
    mix). With :func:`~tfloop.dataflow.fix_rng_seed` the order is the same at every run.

    Example:
        >>> from tfloop.dataflow import DataFromList, fix_rng_seed
        >>> fix_rng_seed(0)
        >>> df = LocallyShuffleData(DataFromList([[i] for i in range(10)], shuffle=False), 4)
        >>> df.reset_state(); len([dp for _, dp in zip(range(5), df)])
        5
        >>> fix_rng_seed(None)
    """

    @tensorpack_keywords(nr_reuse="num_reuse")
    def __init__(self, ds, buffer_size, num_reuse=1, shuffle_interval=None):
        """
        Args:
            ds (DataFlow): the input.
            buffer_size (int): size of the buffer.
            num_reuse (int): put every datapoint this many times into the buffer.
            shuffle_interval (int): shuffle after this many datapoints from ``ds``;
                defaults to ``buffer_size // 3``.
        """
        ProxyDataFlow.__init__(self, ds)
        buffer_size = check_positive_int(buffer_size, "LocallyShuffleData: buffer_size")
        self.q = deque(maxlen=buffer_size)
        if shuffle_interval is None:
            shuffle_interval = max(1, buffer_size // 3)
        self.shuffle_interval = check_positive_int(shuffle_interval,
                                                   "LocallyShuffleData: shuffle_interval")
        self.num_reuse = check_positive_int(num_reuse, "LocallyShuffleData: num_reuse")
        self._inf_ds = RepeatedData(ds, -1)

    def reset_state(self):
        self._guard = DataFlowReentrantGuard()
        ProxyDataFlow.reset_state(self)
        RNGDataFlow.reset_state(self)
        self.q.clear()
        self._iter_cnt = 0
        self._inf_iter = iter(self._inf_ds)

    def __len__(self):
        return len(self.ds) * self.num_reuse

    def _shuffle_buffer(self):
        items = list(self.q)
        self.rng.shuffle(items)
        self.q.clear()
        self.q.extend(items)

    def __iter__(self):
        with self._guard:
            for dp in self._inf_iter:
                self._iter_cnt = (self._iter_cnt + 1) % self.shuffle_interval
                if self._iter_cnt == 0:
                    self._shuffle_buffer()
                for _ in range(self.num_reuse):
                    if len(self.q) == self.q.maxlen:
                        yield self.q.popleft()
                    self.q.append(dp)


class CacheData(ProxyDataFlow):
    """Keeps the first full pass of ``ds`` in memory and replays it afterwards.

    Stop the first pass early and the cache stays incomplete (it is then filled again).

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = CacheData(DataFromList([[1], [2]], shuffle=False))
        >>> df.reset_state(); list(df) == list(df)
        True
    """

    def __init__(self, ds, shuffle=False):
        """
        Args:
            ds (DataFlow): the input.
            shuffle (bool): shuffle the cached datapoints at each replay.
        """
        self.shuffle = shuffle
        super().__init__(ds)

    def reset_state(self):
        super().reset_state()
        self._guard = DataFlowReentrantGuard()
        if self.shuffle:
            self.rng = get_rng(self)
        self.buffer = []
        self._complete = False

    def __iter__(self):
        with self._guard:
            if self._complete:
                if self.shuffle:
                    self.rng.shuffle(self.buffer)
                yield from self.buffer
                return
            self.buffer = []
            for dp in self.ds:
                self.buffer.append(dp)
                yield dp
            self._complete = True
