"""Mapping, selecting, repeating, caching and local shuffling."""
import itertools

import pytest

from tfloop.dataflow import (
    CacheData,
    DataFromGenerator,
    DataFromList,
    FixedSizeData,
    LocallyShuffleData,
    MapData,
    MapDataComponent,
    RepeatedData,
    RepeatedDataPoint,
    SelectComponent,
    fix_rng_seed,
)


def numbers(n, shuffle=False):
    return DataFromList([[i, float(i)] for i in range(n)], shuffle=shuffle)


def take(df, n):
    return list(itertools.islice(df, n))


def test_fixed_size_data_keeps_or_restarts_state():
    kept = FixedSizeData(numbers(5), 3)
    kept.reset_state()
    assert [[dp[0] for dp in kept] for _ in range(3)] == [[0, 1, 2], [3, 4, 0], [1, 2, 3]]
    restarted = FixedSizeData(numbers(5), 6, keep_state=False)
    restarted.reset_state()
    assert [dp[0] for dp in restarted] == [0, 1, 2, 3, 4, 0] == [dp[0] for dp in restarted]
    assert len(restarted) == 6
    empty = FixedSizeData(DataFromList([], shuffle=False), 2)
    empty.reset_state()
    with pytest.raises(ValueError, match="produced no datapoint"):
        list(empty)


def test_map_data_maps_copies_and_drops_none():
    source = [[1, 2], [3, 4]]
    df = MapData(DataFromList(source, shuffle=False), lambda dp: dp.append(0) or dp)
    assert list(df) == [[1, 2, 0], [3, 4, 0]] and source == [[1, 2], [3, 4]]
    dropped = MapData(numbers(4), lambda dp: dp if dp[0] % 2 else None)
    assert [dp[0] for dp in dropped] == [1, 3]
    with pytest.raises(TypeError, match="func must be callable"):
        MapData(numbers(1), 3)


def test_map_data_component_by_index_or_key_and_tuples():
    df = MapDataComponent(DataFromList([(1, "a")], shuffle=False), lambda x: x * 10, index=0)
    assert list(df) == [[10, "a"]]
    keyed = MapDataComponent(DataFromList([{"x": 1, "y": 2}], shuffle=False), lambda v: v + 1, "y")
    assert list(keyed) == [{"x": 1, "y": 3}]
    dropped = MapDataComponent(numbers(3), lambda v: None if v == 1 else v)
    assert [dp[0] for dp in dropped] == [0, 2]


def test_select_component_reorders():
    df = SelectComponent(DataFromList([[1, 2, 3]], shuffle=False), [2, 0])
    assert list(df) == [[3, 1]]


def test_repeated_data_and_datapoint():
    df = RepeatedData(numbers(2), 3)
    assert [dp[0] for dp in df] == [0, 1] * 3 and len(df) == 6
    forever = RepeatedData(numbers(2), -1)
    assert [dp[0] for dp in take(forever, 5)] == [0, 1, 0, 1, 0]
    with pytest.raises(NotImplementedError):
        len(forever)
    points = RepeatedDataPoint(numbers(2), 2)
    assert [dp[0] for dp in points] == [0, 0, 1, 1] and len(points) == 4
    with pytest.raises(ValueError, match="RepeatedDataPoint: num must be a positive int"):
        RepeatedDataPoint(numbers(2), 0)


def test_cache_data_replays_the_first_pass():
    calls = []

    def gen():
        calls.append(1)
        yield from ([i] for i in range(4))
    df = CacheData(DataFromGenerator(gen))
    df.reset_state()
    assert list(df) == list(df) == [[0], [1], [2], [3]] and len(calls) == 1
    shuffled = CacheData(numbers(20), shuffle=True)
    shuffled.reset_state()
    first, second = list(shuffled), list(shuffled)
    assert sorted(second) == sorted(first) and second != first


def test_cache_data_refills_after_an_interrupted_first_pass():
    df = CacheData(numbers(4))
    df.reset_state()
    take(iter(df), 2)
    assert [dp[0] for dp in df] == [0, 1, 2, 3]
    assert [dp[0] for dp in df] == [0, 1, 2, 3]


def shuffled_stream(seed, n=40):
    fix_rng_seed(seed)
    try:
        df = LocallyShuffleData(numbers(30), buffer_size=10, shuffle_interval=3)
        df.reset_state()
        return [dp[0] for dp in take(df, n)]
    finally:
        fix_rng_seed(None)


def test_locally_shuffle_data_is_deterministic_with_a_fixed_seed():
    first, again, other = shuffled_stream(7), shuffled_stream(7), shuffled_stream(8)
    assert first == again
    assert first != other
    assert first != sorted(first)
    assert sorted(first[:20]) != list(range(20)) or first[:20] != list(range(20))


def test_locally_shuffle_data_keeps_every_datapoint_and_reuses():
    df = LocallyShuffleData(numbers(10), buffer_size=4, num_reuse=2)
    df.reset_state()
    out = [dp[0] for dp in take(df, 12)]
    assert len(df) == 20
    assert all(0 <= v < 10 for v in out)
    assert max(out.count(v) for v in set(out)) <= 2
