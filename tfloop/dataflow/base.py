"""The DataFlow protocol: an iterable of datapoints with an optional length and a reset hook.

A datapoint is a list (or dict) of components. ``reset_state()`` is called once, in the process
that will iterate, before the first ``__iter__``; parallel runners call it in each worker.
"""
import threading
from abc import ABCMeta, abstractmethod
from collections.abc import Iterator
from typing import Any

from tfloop.utils.rng import get_rng

__all__ = [
    "DataFlow",
    "DataFlowReentrantGuard",
    "DataFlowTerminated",
    "NoLength",
    "ProxyDataFlow",
    "RNGDataFlow",
]


class DataFlowTerminated(BaseException):
    """Raised when a DataFlow cannot produce data any more (its pipes or workers were shut down)."""


class NoLength(NotImplementedError, TypeError):
    """A DataFlow without a length. A NotImplementedError as in tensorpack, and also a TypeError so
    that ``list(df)`` (which asks for a length hint) works on such DataFlows."""


class DataFlowReentrantGuard:
    """Refuses a second concurrent iteration of a DataFlow whose ``__iter__`` keeps state.

    Example:
        >>> guard = DataFlowReentrantGuard()
        >>> with guard:
        ...     pass
    """

    def __init__(self):
        self._lock = threading.Lock()

    def __enter__(self):
        if not self._lock.acquire(blocking=False):
            raise threading.ThreadError(
                "This DataFlow is not reentrant: it is already being iterated. Finish (or close) "
                "the other iteration first, or make a second instance of the DataFlow.")

    def __exit__(self, exc_type, exc_val, exc_tb):
        self._lock.release()
        return False


class DataFlowMeta(ABCMeta):
    """Lets old-style DataFlows that define ``get_data``/``size`` work as
    ``__iter__``/``__len__``."""

    def __new__(mcls, name, bases, namespace, **kwargs):
        if "__iter__" not in namespace and "get_data" in namespace:
            namespace["__iter__"] = namespace["get_data"]
        if "__len__" not in namespace and "size" in namespace:
            namespace["__len__"] = namespace["size"]
        return super().__new__(mcls, name, bases, namespace, **kwargs)


class DataFlow(metaclass=DataFlowMeta):
    """Base class of every DataFlow: ``__iter__`` yields datapoints, ``__len__`` is optional.

    * ``__iter__`` yields lists (or dicts) of components; it may be finite or infinite, and a
      finite one can be iterated again right after it stops.
    * ``__len__`` is a rough size; DataFlows without one raise ``NotImplementedError``
      (raise :class:`NoLength`, a NotImplementedError that ``list(df)`` accepts).
    * ``reset_state()`` must be called once by the process that iterates, before ``__iter__``.

    Example:
        >>> class Squares(DataFlow):
        ...     def __iter__(self):
        ...         for i in range(3):
        ...             yield [i, i * i]
        ...     def __len__(self):
        ...         return 3
        >>> df = Squares(); df.reset_state(); list(df)
        [[0, 0], [1, 1], [2, 4]]
    """

    @abstractmethod
    def __iter__(self) -> Iterator[Any]:
        """Yield datapoints: lists or dicts of components."""

    def __len__(self) -> int:
        raise NoLength(f"{type(self).__name__} has no length.")

    def reset_state(self) -> None:
        """Initialize what depends on the process (RNGs, workers). Called once before iterating."""

    def get_data(self) -> Iterator[Any]:
        """Old name of ``__iter__``."""
        return self.__iter__()

    def size(self) -> int:
        """Old name of ``__len__``."""
        return self.__len__()


class RNGDataFlow(DataFlow):
    """A DataFlow with ``self.rng``, a ``np.random.RandomState`` seeded anew in ``reset_state()``.

    Example:
        >>> class Noise(RNGDataFlow):
        ...     def __iter__(self):
        ...         yield [self.rng.rand()]
        >>> df = Noise(); df.reset_state(); len(next(iter(df)))
        1
    """

    rng = None

    def reset_state(self):
        self.rng = get_rng(self)


class ProxyDataFlow(DataFlow):
    """A DataFlow that forwards everything to ``self.ds``; subclasses override what they change.

    Example:
        >>> class Doubled(ProxyDataFlow):
        ...     def __iter__(self):
        ...         for dp in self.ds:
        ...             yield [2 * dp[0]]
    """

    def __init__(self, ds):
        """
        Args:
            ds (DataFlow): the DataFlow to proxy.
        """
        self.ds = ds

    def reset_state(self):
        self.ds.reset_state()

    def __len__(self):
        return self.ds.__len__()

    def __iter__(self):
        return self.ds.__iter__()
