"""Parallel maps (issue 23, DataFlow): results come back before the buffer is full, the
datapoints in flight are bounded by the results' memory, and TF ops in a forked worker get a
hint that the worker inherits the training graph."""
import numpy as np
import pytest

from tfloop.compat import tf
from tfloop.dataflow import DataFlow, MultiProcessMapData, MultiThreadMapData


class CountingSource(DataFlow):
    """Endless numbers; ``pulled`` counts what was read."""

    def __init__(self):
        self.pulled = 0

    def __iter__(self):
        while True:
            self.pulled += 1
            yield [self.pulled]

    def __len__(self):
        return 1000


@pytest.fixture(params=["process", "thread"])
def map_class(request):
    return MultiProcessMapData if request.param == "process" else MultiThreadMapData


def test_the_first_result_comes_before_the_buffer_fills(map_class):
    source = CountingSource()
    df = map_class(source, 2, lambda dp: dp, buffer_size=200)
    df.reset_state()
    try:
        next(iter(df))
        assert source.pulled <= 2 * 2 + 1      # two per worker, not 200
    finally:
        df.close()


def test_the_buffer_grows_to_buffer_size_for_small_results():
    source = CountingSource()
    df = MultiThreadMapData(source, 2, lambda dp: dp, buffer_size=20)
    df.reset_state()
    itr = iter(df)
    for _ in range(100):
        next(itr)
    assert 100 + 20 - 2 <= source.pulled <= 100 + 20
    df.close()


class BigResults(MultiThreadMapData):
    MAX_BUFFER_BYTES = 10 * 8000


def test_the_datapoints_in_flight_are_bounded_by_the_results_memory():
    source = CountingSource()
    df = BigResults(source, 2, lambda dp: [np.zeros(1000)], buffer_size=200)   # 8000 bytes each
    df.reset_state()
    itr = iter(df)
    in_flight = []
    for i in range(60):
        next(itr)
        in_flight.append(source.pulled - (i + 1))
    assert max(in_flight[5:]) <= 10
    df.close()


def make_tf_constant(dp):
    return [tf.constant(dp[0]).name]


def test_tf_ops_in_a_forked_worker_get_a_hint_about_the_inherited_graph():
    source = CountingSource()
    df = MultiProcessMapData(source, 1, make_tf_constant, buffer_size=4)
    graph = tf.Graph()
    with graph.as_default():
        graph.finalize()
        df.reset_state()
        try:
            with pytest.raises(RuntimeError, match="Graph is finalized") as info:
                next(iter(df))
        finally:
            df.close()
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "inherits its TensorFlow graph, which training has finalized" in notes
