"""Parallel maps: exact order when strict, endless streams otherwise, errors, deaths, seeding."""
import itertools
import os
import random
import signal
import time
import traceback

import pytest

from tfloop.dataflow import (
    DataFlowWorkerError,
    DataFromList,
    MapData,
    MultiProcessMapAndBatchData,
    MultiProcessMapAndBatchDataZMQ,
    MultiProcessMapData,
    MultiProcessMapDataZMQ,
    MultiThreadMapData,
    fix_rng_seed,
    imgaug,
)


def numbers(n):
    return DataFromList([[i] for i in range(n)], shuffle=False)


def jittery_times_ten(dp):
    time.sleep(random.random() * 0.002)  # finish out of order
    return [dp[0] * 10]


def drop_odd(dp):
    return dp if dp[0] % 2 == 0 else None


def fail_on_three(dp):
    if dp[0] == 3:
        raise KeyError("no three")
    return dp


@pytest.fixture(params=["process", "thread"])
def make_map(request):
    made = []

    def make(ds, func, **kwargs):
        cls = MultiProcessMapData if request.param == "process" else MultiThreadMapData
        df = cls(ds, 3, func, **kwargs)
        made.append(df)
        return df
    yield make
    for df in made:
        df.close()


def test_strict_produces_map_data_exactly_in_order_every_pass(make_map):
    df = make_map(numbers(40), jittery_times_ten, buffer_size=8, strict=True)
    df.reset_state()
    expected = list(MapData(numbers(40), jittery_times_ten))
    assert list(df) == expected
    assert list(df) == expected


def test_strict_drops_none_like_map_data(make_map):
    df = make_map(numbers(10), drop_odd, strict=True, buffer_size=4)
    df.reset_state()
    assert [dp[0] for dp in df] == [0, 2, 4, 6, 8]


def test_strict_pass_after_an_abandoned_one_starts_clean(make_map):
    df = make_map(numbers(12), jittery_times_ten, buffer_size=6, strict=True)
    df.reset_state()
    itr = iter(df)
    assert [next(itr)[0] for _ in range(2)] == [0, 10]
    itr.close()
    assert [dp[0] for dp in df] == [10 * i for i in range(12)]


def test_non_strict_is_an_endless_reordering_of_repeated_passes(make_map):
    df = make_map(numbers(10), jittery_times_ten, buffer_size=5)
    df.reset_state()
    assert len(df) == 10
    out = [dp[0] for dp in itertools.islice(df, 30)]
    # with 5 in flight, the first 30 results come from the first 35 sent and include the first 25
    assert set(out) == {10 * i for i in range(10)}
    assert all(2 <= out.count(v) <= 4 for v in set(out))


def test_a_map_exception_is_raised_here_naming_the_worker(make_map):
    df = make_map(numbers(10), fail_on_three, strict=True, buffer_size=4)
    df.reset_state()
    with pytest.raises(KeyError, match="no three") as info:
        list(df)
    text = "".join(traceback.format_exception(info.value))
    assert "while mapping a datapoint" in text
    assert "worker" in text or "thread" in text
    assert 'raise KeyError("no three")' in text


def test_a_killed_map_worker_raises_instead_of_hanging():
    df = MultiProcessMapDataZMQ(numbers(100), 2, jittery_times_ten, buffer_size=10)
    df.reset_state()
    itr = iter(df)
    next(itr)
    victim = df._group.workers[0].pid
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(DataFlowWorkerError, match=rf"worker 0 \(pid {victim}\) was killed"):
        for _ in range(10 ** 5):
            next(itr)
    df.close()


def pid_and_draw(aug):
    return lambda dp: [os.getpid(), int(aug.rng.randint(1 << 30))]


def test_augmentors_in_map_workers_draw_differently_with_a_fixed_seed():
    fix_rng_seed(1)
    try:
        aug = imgaug.Brightness(10)
        df = MultiProcessMapData(numbers(40), 2, pid_and_draw(aug), strict=True, buffer_size=4)
        df.reset_state()
        firsts = {}
        for pid, draw in list(df):
            firsts.setdefault(pid, draw)
    finally:
        fix_rng_seed(None)
        df.close()
    assert len(firsts) == 2 and len(set(firsts.values())) == 2


def test_map_and_batch_batches_mapped_datapoints():
    df = MultiProcessMapAndBatchData(numbers(20), 2, jittery_times_ten, batch_size=4)
    assert MultiProcessMapAndBatchData is MultiProcessMapAndBatchDataZMQ
    assert len(df) == 5
    df.reset_state()
    batches = [b[0].tolist() for b in itertools.islice(df, 10)]
    assert all(len(b) == 4 for b in batches)
    assert all(v % 10 == 0 and 0 <= v < 200 for b in batches for v in b)
    df.close()


def test_map_and_batch_reraises_a_map_error():
    df = MultiProcessMapAndBatchData(numbers(20), 1, fail_on_three, batch_size=2)
    df.reset_state()
    with pytest.raises(KeyError, match="no three"):
        list(itertools.islice(df, 100))
    df.close()


def test_arguments_are_checked():
    assert MultiProcessMapData is MultiProcessMapDataZMQ
    with pytest.raises(TypeError, match="map_func must be callable"):
        MultiProcessMapData(numbers(2), 2)
    with pytest.raises(ValueError, match="number of workers must be a positive int, got 0"):
        MultiThreadMapData(numbers(2), 0, drop_odd)
    with pytest.raises(ValueError, match="buffer_size=4 must be larger than batch_size=4"):
        MultiProcessMapAndBatchData(numbers(20), 1, drop_odd, 4, buffer_size=4)
