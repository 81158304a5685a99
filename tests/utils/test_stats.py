"""StatCounter, RatioCounter, Accuracy, BinaryStatistics and OnlineMoments against numpy."""
import numpy as np
import pytest

from tfloop.utils.stats import Accuracy, BinaryStatistics, OnlineMoments, RatioCounter, StatCounter


def test_stat_counter_reports_the_values_fed():
    s = StatCounter()
    values = [3.0, -1.0, 4.0, 1.5]
    for v in values:
        s.feed(v)
    assert (s.count, s.average, s.sum, s.max, s.min) == (4, np.mean(values), 7.5, 4.0, -1.0)
    assert s.samples() == values
    s.reset()
    assert s.count == 0
    with pytest.raises(ValueError, match="average of no values"):
        s.average  # noqa: B018


def test_stat_counter_averages_arrays_elementwise():
    s = StatCounter()
    s.feed(np.array([1.0, 2.0]))
    s.feed(np.array([3.0, 6.0]))
    np.testing.assert_array_equal(s.average, [2.0, 4.0])
    np.testing.assert_array_equal(s.sum, [4.0, 8.0])


def test_ratio_counter_and_accuracy():
    r = RatioCounter()
    assert r.ratio == 0
    r.feed(3, total=4)
    r.feed(1)
    assert (r.count, r.total, r.ratio) == (4, 5, 0.8)
    acc = Accuracy()
    acc.feed(1, 4)
    assert acc.accuracy == 0.25
    acc.reset()
    assert acc.accuracy == 0


def test_binary_statistics_match_the_definitions():
    rng = np.random.RandomState(0)
    pred, label = rng.randint(0, 2, 50), rng.randint(0, 2, 50)
    stats = BinaryStatistics()
    stats.feed(pred[:20], label[:20])
    stats.feed(pred[20:], label[20:])
    tp = np.sum((pred == 1) & (label == 1))
    assert stats.precision == tp / np.sum(pred == 1)
    assert stats.recall == tp / np.sum(label == 1)
    assert stats.false_positive == pytest.approx(1 - stats.precision)
    assert stats.false_negative == pytest.approx(1 - stats.recall)
    assert (stats.nr_pos, stats.nr_neg) == (np.sum(label == 1), np.sum(label == 0))
    assert stats.corr_neg == np.sum((pred == 0) & (label == 0))
    empty = BinaryStatistics()
    assert (empty.precision, empty.recall, empty.false_positive,
            empty.false_negative) == (0, 0, 0, 0)
    with pytest.raises(ValueError, match="pred has shape \\(2,\\) but label has \\(3,\\)"):
        stats.feed(np.zeros(2), np.zeros(3))


def test_online_moments_equal_numpy_mean_and_unbiased_variance():
    rng = np.random.RandomState(1)
    data = rng.randn(100, 3)
    m = OnlineMoments()
    for row in data:
        m.feed(row)
    np.testing.assert_allclose(m.mean, data.mean(axis=0))
    np.testing.assert_allclose(m.variance, data.var(axis=0, ddof=1))
    np.testing.assert_allclose(m.std, data.std(axis=0, ddof=1))
    one = OnlineMoments()
    one.feed(1.0)
    with pytest.raises(ValueError, match="at least 2 values"):
        one.variance  # noqa: B018
