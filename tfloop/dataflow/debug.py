"""DataFlows for looking at a pipeline: print what flows through, measure how fast it flows."""
import itertools
import time
from collections.abc import Mapping

import numpy as np
import tqdm

from tfloop.dataflow.base import ProxyDataFlow
from tfloop.utils import logger

__all__ = ["PrintData", "TestDataSpeed"]


def _describe(value, position, depth, max_depth, max_list):
    """Lines describing one component: its type, dtype, shape and range, nested lists indented."""
    indent = "  " * depth
    head = f"{indent}{position}: {type(value).__name__}"
    if isinstance(value, np.ndarray):
        line = f"{head}:{value.dtype} of shape {value.shape}"
        if value.size and value.dtype.kind in "biuf":
            line += f" in range [{value.min()}, {value.max()}]"
        return [line]
    if isinstance(value, (bool, int, float, np.generic)):
        return [f"{head} with value {value}"]
    if isinstance(value, (list, tuple)):
        lines = [f"{head} of len {len(value)}"]
        if depth < max_depth:
            for k, sub in enumerate(value[:max_list]):
                lines.extend(_describe(sub, k, depth + 1, max_depth, max_list))
            if len(value) > max_list:
                lines.append(f"{indent}  ...")
        elif value:
            lines.append(f"{indent}  ...")
        return lines
    return [head]


class PrintData(ProxyDataFlow):
    """Passes datapoints through unchanged, logging the type, shape and range of the first
    ``num`` datapoints' components: a quick look at what a pipeline produces.

    Example:
        >>> from tfloop.dataflow import BatchData, FakeData
        >>> df = PrintData(BatchData(FakeData([[28, 28]], size=8), 4), num=1)
        >>> df.reset_state(); len(list(df))
        2
    """

    def __init__(self, ds, num=1, name=None, max_depth=3, max_list=3):
        """
        Args:
            ds (DataFlow): the input.
            num (int): number of datapoints to describe (counted from ``reset_state``).
            name (str): a name shown in the log, to tell several PrintData apart.
            max_depth (int): deepest level of nested lists described.
            max_list (int): most elements of a list described.
        """
        super().__init__(ds)
        self.num = num
        self.name = name
        self.cnt = 0
        self.max_depth = max_depth
        self.max_list = max_list

    def _get_msg(self, dp):
        items = dp.items() if isinstance(dp, Mapping) else enumerate(dp)
        lines = [f"datapoint {self.cnt}/{self.num} with {len(dp)} components consists of"]
        for key, value in items:
            lines.extend(_describe(value, key, 1, self.max_depth, self.max_list))
        return "\n".join(lines)

    def __iter__(self):
        for dp in self.ds:
            if self.cnt < self.num:
                if self.cnt == 0:
                    label = f" ({self.name})" if self.name is not None else ""
                    logger.info(f"Contents of DataFlow{label}:")
                logger.info(self._get_msg(dp))
                self.cnt += 1
            yield dp

    def reset_state(self):
        super().reset_state()
        self.cnt = 0


class TestDataSpeed(ProxyDataFlow):
    """Takes ``size`` datapoints as fast as possible with a progress bar and logs the speed;
    iterating it then produces ``ds`` as usual.

    Example:
        >>> from tfloop.dataflow import FakeData
        >>> TestDataSpeed(FakeData([[4]], size=100), size=50).start()
    """

    __test__ = False  # not a pytest test class

    def __init__(self, ds, size=5000, warmup=0):
        """
        Args:
            ds (DataFlow): the DataFlow to measure.
            size (int): number of datapoints to take.
            warmup (int): datapoints taken before timing starts.
        """
        super().__init__(ds)
        self.test_size = int(size)
        self.warmup = int(warmup)
        self._reset_called = False
        self.speed = None

    def reset_state(self):
        self._reset_called = True
        super().reset_state()

    def __iter__(self):
        self.start()
        yield from self.ds

    def start(self):
        """Measure: reset ``ds`` if needed, take ``warmup`` then ``size`` datapoints, log the
        speed (also kept in ``self.speed``, datapoints per second)."""
        if not self._reset_called:
            self.ds.reset_state()
            self._reset_called = True
        itr = iter(self.ds)
        for _ in range(self.warmup):
            next(itr)
        count, start = 0, time.perf_counter()
        with tqdm.tqdm(total=self.test_size, leave=True, smoothing=0.2, ascii=True) as bar:
            for _ in itertools.islice(itr, self.test_size):
                count += 1
                bar.update()
        elapsed = max(time.perf_counter() - start, 1e-9)
        self.speed = count / elapsed
        logger.info(f"TestDataSpeed: {count} datapoints in {elapsed:.2f} s "
                    f"({self.speed:.1f} datapoints/s).")

