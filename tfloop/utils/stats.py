"""Running statistics in Python: counts, ratios, binary-decision rates, online moments."""
import numpy as np

__all__ = ["StatCounter", "RatioCounter", "Accuracy", "BinaryStatistics", "OnlineMoments"]


class StatCounter:
    """Keep every value fed and report their count, average, sum, max and min.

    Example:
        >>> s = StatCounter()
        >>> for v in [1.0, 2.0, 6.0]:
        ...     s.feed(v)
        >>> s.average, s.max, s.count
        (3.0, 6.0, 3)
    """

    def __init__(self):
        self.reset()

    def feed(self, v):
        """Add a value (a number, or an array of the same shape every time)."""
        self._values.append(v)

    def reset(self):
        self._values = []

    @property
    def count(self):
        return len(self._values)

    def _nonempty(self, what):
        if not self._values:
            raise ValueError(f"StatCounter.{what} of no values: feed() at least one first.")
        return self._values

    @property
    def average(self):
        return np.mean(self._nonempty("average"), axis=0)

    @property
    def sum(self):
        return np.sum(self._nonempty("sum"), axis=0)

    @property
    def max(self):
        return max(self._nonempty("max"))

    @property
    def min(self):
        return min(self._nonempty("min"))

    def samples(self):
        """Every value fed since the last reset, in order."""
        return self._values


class RatioCounter:
    """The ratio of a count of events to a total, accumulated over feeds (0 before any total).

    Example:
        >>> r = RatioCounter()
        >>> r.feed(3, total=4); r.feed(1, total=4)
        >>> r.ratio
        0.5
    """

    def __init__(self):
        self.reset()

    def reset(self):
        self._tot = 0
        self._cnt = 0

    def feed(self, count, total=1):
        """Add ``count`` events of interest out of ``total`` events."""
        self._tot += total
        self._cnt += count

    @property
    def ratio(self):
        return 0 if self._tot == 0 else self._cnt / self._tot

    @property
    def total(self):
        return self._tot

    @property
    def count(self):
        return self._cnt


class Accuracy(RatioCounter):
    """A :class:`RatioCounter` of correct predictions, read as ``accuracy``.

    Example:
        >>> acc = Accuracy()
        >>> acc.feed(int((pred == label).sum()), total=len(label))
        >>> acc.accuracy
    """

    @property
    def accuracy(self):
        return self.ratio


class BinaryStatistics:
    """Precision, recall and error rates of binary predictions, accumulated over feeds.

    Example:
        >>> stats = BinaryStatistics()
        >>> stats.feed(np.array([1, 0, 1]), np.array([1, 1, 0]))
        >>> stats.precision, stats.recall
        (0.5, 0.5)
    """

    def __init__(self):
        self.reset()

    def reset(self):
        self.nr_pos = 0        # labels that are 1
        self.nr_neg = 0        # labels that are 0
        self.nr_pred_pos = 0
        self.nr_pred_neg = 0
        self.corr_pos = 0      # predicted 1 and labelled 1
        self.corr_neg = 0      # predicted 0 and labelled 0

    def feed(self, pred, label):
        """Add predictions and labels: binary arrays of the same shape."""
        pred, label = np.asarray(pred), np.asarray(label)
        if pred.shape != label.shape:
            raise ValueError(f"BinaryStatistics.feed: pred has shape {pred.shape} but label has "
                             f"{label.shape}; they must match.")
        self.nr_pos += int((label == 1).sum())
        self.nr_neg += int((label == 0).sum())
        self.nr_pred_pos += int((pred == 1).sum())
        self.nr_pred_neg += int((pred == 0).sum())
        self.corr_pos += int(((pred == 1) & (label == 1)).sum())
        self.corr_neg += int(((pred == 0) & (label == 0)).sum())

    @property
    def precision(self):
        return 0 if self.nr_pred_pos == 0 else self.corr_pos / self.nr_pred_pos

    @property
    def recall(self):
        return 0 if self.nr_pos == 0 else self.corr_pos / self.nr_pos

    @property
    def false_positive(self):
        """The fraction of positive predictions that are wrong (1 - precision)."""
        return 0 if self.nr_pred_pos == 0 else 1 - self.precision

    @property
    def false_negative(self):
        """The fraction of positive labels that were missed (1 - recall)."""
        return 0 if self.nr_pos == 0 else 1 - self.recall


class OnlineMoments:
    """Mean and variance of a stream of numbers or arrays, without storing them (Welford's
    algorithm); the variance is the unbiased (n - 1) one.

    Example:
        >>> m = OnlineMoments()
        >>> for v in [1.0, 2.0, 3.0, 4.0]:
        ...     m.feed(v)
        >>> m.mean, m.variance
        (2.5, 1.6666666666666667)
    """

    def __init__(self):
        self._mean = 0
        self._m2 = 0
        self._n = 0

    def feed(self, x):
        """Add a value (a number, or an array of the same shape every time)."""
        self._n += 1
        delta = x - self._mean
        self._mean = self._mean + delta / self._n
        self._m2 = self._m2 + delta * (x - self._mean)

    @property
    def mean(self):
        return self._mean

    @property
    def variance(self):
        if self._n < 2:
            raise ValueError(f"OnlineMoments.variance needs at least 2 values, got {self._n}.")
        return self._m2 / (self._n - 1)

    @property
    def std(self):
        return np.sqrt(self.variance)
