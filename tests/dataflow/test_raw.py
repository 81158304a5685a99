"""DataFlows made from Python objects."""
import queue

import numpy as np
import pytest

from tfloop.dataflow import (
    DataFromGenerator,
    DataFromIterable,
    DataFromList,
    DataFromQueue,
    FakeData,
    NoLength,
)


def test_fake_data_shapes_dtypes_domains_and_size():
    df = FakeData([[2, 3], [4]], size=5, dtype=["float32", "int32"], domain=[(0, 1), (10, 20)])
    df.reset_state()
    dps = list(df)
    assert len(dps) == len(df) == 5
    assert dps[0][0].shape == (2, 3) and dps[0][0].dtype == np.float32
    assert dps[0][1].dtype == np.int32
    assert all(10 <= v < 20 for dp in dps for v in dp[1])
    assert not np.array_equal(dps[0][0], dps[1][0])


def test_fake_data_not_random_repeats_one_datapoint():
    df = FakeData([[3]], size=3, random=False)
    df.reset_state()
    dps = list(df)
    assert all(np.array_equal(dp[0], dps[0][0]) for dp in dps)


def test_fake_data_refuses_mismatched_dtypes():
    with pytest.raises(ValueError, match="2 shapes but 3 dtypes"):
        FakeData([[1], [1]], dtype=["float32"] * 3)


def test_data_from_list_in_order_or_shuffled_each_pass():
    items = [[i] for i in range(20)]
    ordered = DataFromList(items, shuffle=False)
    assert list(ordered) == items and len(ordered) == 20
    shuffled = DataFromList(items)
    shuffled.reset_state()
    first, second = list(shuffled), list(shuffled)
    assert sorted(first) == items and first != items and first != second


def test_data_from_list_shuffle_needs_reset():
    with pytest.raises(RuntimeError, match="reset_state"):
        list(DataFromList([[1]]))


def test_data_from_generator_restarts_a_function_and_has_no_length():
    df = DataFromGenerator(lambda: ([i] for i in range(3)))
    assert list(df) == list(df) == [[0], [1], [2]]  # list() accepts a DataFlow without length
    with pytest.raises(NotImplementedError):  # tensorpack's exception for "no length"
        len(df)
    with pytest.raises(NoLength, match="DataFromGenerator has no length"):
        len(df)
    assert len(DataFromGenerator([[1], [2]])) == 2


def test_data_from_iterable_length_when_known():
    assert len(DataFromIterable([[1], [2]])) == 2
    df = DataFromIterable(iter([[1]]))
    with pytest.raises(NotImplementedError):
        len(df)
    assert list(df) == [[1]]


def test_data_from_queue_takes_items_as_they_come():
    q = queue.Queue()
    for i in range(3):
        q.put([i])
    itr = iter(DataFromQueue(q))
    assert [next(itr) for _ in range(3)] == [[0], [1], [2]]


def test_fake_data_with_a_scalar_component():
    df = FakeData([[], [2]], size=2, dtype=["int32", "float32"], domain=[(0, 10), (0, 1)])
    df.reset_state()
    points = list(df)
    assert [dp[0].shape for dp in points] == [(), ()] and points[0][0].dtype == np.int32
