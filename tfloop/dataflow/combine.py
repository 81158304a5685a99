"""DataFlows that combine several DataFlows: one after another, side by side, or mixed."""
import itertools

import numpy as np

from tfloop.dataflow.base import DataFlow, RNGDataFlow
from tfloop.utils import logger

__all__ = ["ConcatData", "JoinData", "RandomChooseData", "RandomMixData"]


def _check_list(owner, df_lists):
    if not isinstance(df_lists, (list, tuple)) or not df_lists:
        raise ValueError(f"{owner} needs a non-empty list of DataFlows, got {df_lists!r}.")
    return list(df_lists)


class ConcatData(DataFlow):
    """All datapoints of the first DataFlow, then all of the second, and so on.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> a, b = DataFromList([[1]], shuffle=False), DataFromList([[2]], shuffle=False)
        >>> df = ConcatData([a, b])
        >>> df.reset_state(); list(df)
        [[1], [2]]
    """

    def __init__(self, df_lists):
        """
        Args:
            df_lists (list): the DataFlows, in order.
        """
        self.df_lists = _check_list("ConcatData", df_lists)

    def reset_state(self):
        for df in self.df_lists:
            df.reset_state()

    def __len__(self):
        return sum(len(df) for df in self.df_lists)

    def __iter__(self):
        for df in self.df_lists:
            yield from df


class JoinData(DataFlow):
    """Joins the components of several DataFlows: ``[c1, c2]`` and ``[c3]`` give ``[c1, c2, c3]``
    (dicts are merged). Stops when any of them is exhausted.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = JoinData([DataFromList([[1]], shuffle=False), DataFromList([[2]], shuffle=False)])
        >>> df.reset_state(); list(df)
        [[1, 2]]
    """

    def __init__(self, df_lists):
        """
        Args:
            df_lists (list): the DataFlows; the same instance may appear more than once.
        """
        self.df_lists = _check_list("JoinData", df_lists)
        try:
            sizes = [len(df) for df in self.df_lists]
        except NotImplementedError:
            return
        if len(set(sizes)) > 1:
            logger.warning(f"JoinData: the DataFlows have different lengths {sizes}; the joined "
                           "DataFlow stops at the shortest.")

    def reset_state(self):
        seen = set()
        for df in self.df_lists:
            if id(df) not in seen:
                seen.add(id(df))
                df.reset_state()

    def __len__(self):
        return min(len(df) for df in self.df_lists)

    def __iter__(self):
        itrs = [iter(df) for df in self.df_lists]
        while True:
            try:
                parts = [next(itr) for itr in itrs]
            except StopIteration:
                return
            if isinstance(parts[0], (list, tuple)):
                yield list(itertools.chain(*parts))
            else:
                joined = {}
                for part in parts:
                    joined.update(part)
                yield joined


class RandomChooseData(RNGDataFlow):
    """Each datapoint taken from a randomly chosen DataFlow; stops when the chosen one runs out.

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> a, b = DataFromList([[0]] * 5, shuffle=False), DataFromList([[1]] * 5, shuffle=False)
        >>> df = RandomChooseData([(a, 0.5), (b, 0.5)]); df.reset_state()
        >>> all(dp[0] in (0, 1) for dp in df)
        True
    """

    def __init__(self, df_lists):
        """
        Args:
            df_lists (list): DataFlows (chosen uniformly), or ``(DataFlow, probability)`` pairs
                whose probabilities sum to 1.
        """
        super().__init__()
        df_lists = _check_list("RandomChooseData", df_lists)
        if isinstance(df_lists[0], (tuple, list)):
            total = sum(p for _, p in df_lists)
            if not np.isclose(total, 1.0):
                raise ValueError(f"RandomChooseData: the probabilities must sum to 1, they sum "
                                 f"to {total}.")
            self.df_lists = [(df, p) for df, p in df_lists]
        else:
            self.df_lists = [(df, 1.0 / len(df_lists)) for df in df_lists]

    def reset_state(self):
        super().reset_state()
        for df, _ in self.df_lists:
            df.reset_state()

    def __iter__(self):
        itrs = [iter(df) for df, _ in self.df_lists]
        probs = np.array([p for _, p in self.df_lists])
        while True:
            try:
                yield next(itrs[self.rng.choice(len(itrs), p=probs)])
            except StopIteration:
                return


class RandomMixData(RNGDataFlow):
    """Every datapoint of every DataFlow once, interleaved at random (by their lengths).

    Example:
        >>> from tfloop.dataflow import DataFromList
        >>> df = RandomMixData([DataFromList([[0]] * 2, shuffle=False),
        ...                     DataFromList([[1]] * 3, shuffle=False)])
        >>> df.reset_state(); sorted(dp[0] for dp in df)
        [0, 0, 1, 1, 1]
    """

    def __init__(self, df_lists):
        """
        Args:
            df_lists (list): DataFlows with accurate lengths.
        """
        super().__init__()
        self.df_lists = _check_list("RandomMixData", df_lists)
        try:
            self.sizes = [len(df) for df in self.df_lists]
        except NotImplementedError:
            raise ValueError("RandomMixData needs DataFlows with a length; one of them has "
                             "none.") from None

    def reset_state(self):
        super().reset_state()
        for df in self.df_lists:
            df.reset_state()

    def __len__(self):
        return sum(self.sizes)

    def __iter__(self):
        order = np.repeat(np.arange(len(self.df_lists)), self.sizes)
        self.rng.shuffle(order)
        itrs = [iter(df) for df in self.df_lists]
        for k in order:
            try:
                yield next(itrs[k])
            except StopIteration:
                raise ValueError(
                    f"RandomMixData: DataFlow {k} stopped before producing its length "
                    f"{self.sizes[k]}; RandomMixData needs accurate lengths.") from None
