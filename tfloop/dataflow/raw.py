"""DataFlows that produce data from Python objects: lists, generators, iterables, queues, noise."""
import copy

import numpy as np

from tfloop.dataflow.base import DataFlow, NoLength, RNGDataFlow

__all__ = ["DataFromGenerator", "DataFromIterable", "DataFromList", "DataFromQueue", "FakeData"]


class FakeData(RNGDataFlow):
    """Random arrays of the given shapes: a stand-in for a real dataset when measuring speed.

    Example:
        >>> df = FakeData([[2, 3], [1]], size=4, dtype=["float32", "int32"],
        ...               domain=[(0, 1), (0, 10)])
        >>> df.reset_state(); [dp[0].shape for dp in df]
        [(2, 3), (2, 3), (2, 3), (2, 3)]
    """

    def __init__(self, shapes, size=1000, random=True, dtype="float32", domain=(0, 1)):
        """
        Args:
            shapes (list): the shape of each component.
            size (int): number of datapoints.
            random (bool): draw new values for every datapoint; if False, repeat the first one.
            dtype (str or list): one dtype, or one per component.
            domain (tuple or list): ``(low, high)``, or one such tuple per component.
        """
        super().__init__()
        self.shapes = [tuple(s) for s in shapes]
        self._size = int(size)
        self.random = random
        self.dtype = [dtype] * len(shapes) if isinstance(dtype, str) else list(dtype)
        self.domain = [domain] * len(shapes) if isinstance(domain, tuple) else list(domain)
        if len(self.dtype) != len(self.shapes) or len(self.domain) != len(self.shapes):
            raise ValueError(
                f"FakeData got {len(self.shapes)} shapes but {len(self.dtype)} dtypes and "
                f"{len(self.domain)} domains; give one dtype/domain, or one per shape.")

    def __len__(self):
        return self._size

    def _draw(self):
        return [np.asarray(self.rng.rand(*shape) * (high - low) + low).astype(dtype)
                for shape, dtype, (low, high) in zip(self.shapes, self.dtype, self.domain)]

    def __iter__(self):
        if self.random:
            for _ in range(self._size):
                yield self._draw()
        else:
            first = self._draw()
            for _ in range(self._size):
                yield copy.copy(first)


class DataFromQueue(DataFlow):
    """Datapoints taken from a queue's ``get()``, forever.

    Example:
        >>> import queue
        >>> q = queue.Queue(); q.put([1])
        >>> next(iter(DataFromQueue(q)))
        [1]
    """

    def __init__(self, queue):
        """
        Args:
            queue: an object with a ``get()`` method, e.g. ``queue.Queue``.
        """
        self.queue = queue

    def __iter__(self):
        while True:
            yield self.queue.get()


class DataFromList(RNGDataFlow):
    """The elements of a list as datapoints, shuffled every pass by default.

    Example:
        >>> df = DataFromList([[1], [2], [3]], shuffle=False); df.reset_state(); list(df)
        [[1], [2], [3]]
    """

    def __init__(self, lst, shuffle=True):
        """
        Args:
            lst (list): the datapoints.
            shuffle (bool): shuffle the order at each pass.
        """
        super().__init__()
        self.lst = lst
        self.shuffle = shuffle

    def __len__(self):
        return len(self.lst)

    def __iter__(self):
        if not self.shuffle:
            yield from self.lst
        else:
            if self.rng is None:
                raise RuntimeError("DataFromList(shuffle=True): call reset_state() before "
                                   "iterating.")
            for k in self.rng.permutation(len(self.lst)):
                yield self.lst[k]


class DataFromGenerator(DataFlow):
    """Datapoints from an iterable, or from a function that returns a fresh one at each pass.

    Example:
        >>> df = DataFromGenerator(lambda: ([i] for i in range(2))); list(df), list(df)
        ([[0], [1]], [[0], [1]])
    """

    def __init__(self, gen):
        """
        Args:
            gen: an iterable, or a callable returning one (so that every pass restarts it).
        """
        self._gen = gen

    def __iter__(self):
        yield from (self._gen() if callable(self._gen) else self._gen)

    def __len__(self):
        try:
            return len(self._gen)
        except TypeError:
            raise NoLength("DataFromGenerator has no length: its source has none.") from None


class DataFromIterable(DataFlow):
    """Datapoints from an iterable (a list, an array...); its length when it has one.

    Example:
        >>> df = DataFromIterable([[1], [2]]); len(df), list(df)
        (2, [[1], [2]])
    """

    def __init__(self, iterable):
        """
        Args:
            iterable: the source of datapoints.
        """
        self._itr = iterable
        try:
            self._len = len(iterable)
        except TypeError:
            self._len = None

    def __len__(self):
        if self._len is None:
            raise NoLength("DataFromIterable has no length: its iterable has none.")
        return self._len

    def __iter__(self):
        yield from self._itr
