"""Whole DataFlows run in worker processes and threads: data, seeding, errors, deaths, Ctrl-C."""
import os
import signal
import subprocess
import sys
import time
import traceback

import pytest
from dataflow_support import alive, read_until, start_script, wait_gone
from support import scaled_timeout

from tfloop.dataflow import (
    DataFlow,
    DataFlowWorkerError,
    DataFromList,
    FakeData,
    MultiProcessPrefetchData,
    MultiProcessRunner,
    MultiProcessRunnerZMQ,
    MultiThreadPrefetchData,
    MultiThreadRunner,
    PrefetchData,
    PrefetchDataZMQ,
    fix_rng_seed,
)


class Failing(DataFlow):
    """Yields ``ok`` datapoints, then raises."""

    def __init__(self, ok=2):
        self.ok = ok

    def __iter__(self):
        for i in range(self.ok):
            yield [i]
        raise ValueError("the source is broken")


@pytest.fixture(params=["zmq", "queue"])
def make_runner(request):
    made = []

    def make(ds, num_proc):
        runner = (MultiProcessRunnerZMQ(ds, num_proc=num_proc) if request.param == "zmq"
                  else MultiProcessRunner(ds, num_prefetch=4, num_proc=num_proc))
        made.append(runner)
        return runner
    yield make
    for runner in made:
        runner.close()


def test_one_process_keeps_the_order_and_each_pass_has_len_datapoints(make_runner):
    df = make_runner(DataFromList([[i] for i in range(5)], shuffle=False), 1)
    df.reset_state()
    assert len(df) == 5
    assert [dp[0] for dp in df] == [0, 1, 2, 3, 4]
    assert [dp[0] for dp in df] == [0, 1, 2, 3, 4]


def test_workers_are_seeded_differently_even_with_a_fixed_seed(make_runner):
    fix_rng_seed(0)
    try:
        df = make_runner(FakeData([[4]], size=20), 2)
        df.reset_state()
        values = [tuple(dp[0].tolist()) for dp in df]
    finally:
        fix_rng_seed(None)
    assert len(set(values)) == 20  # two workers with one seed would produce every value twice


def test_a_worker_exception_is_raised_here_with_its_name_and_traceback(make_runner):
    df = make_runner(Failing(ok=2), 1)
    df.reset_state()
    with pytest.raises(ValueError, match="the source is broken") as info:
        list(df)
    text = "".join(traceback.format_exception(info.value))
    assert f"{type(df).__name__} worker 0 (pid " in text
    assert 'raise ValueError("the source is broken")' in text  # the worker's own traceback


def test_a_killed_worker_raises_instead_of_hanging(make_runner):
    df = make_runner(FakeData([[10]], size=10 ** 6), 2)
    df.reset_state()
    itr = iter(df)
    next(itr)
    victim = df._group.workers[1].pid
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(DataFlowWorkerError, match=rf"worker 1 \(pid {victim}\) was killed by "
                                                  "signal SIGKILL"):
        for _ in range(10 ** 6):
            next(itr)


def test_reset_state_exactly_once_before_iterating(make_runner):
    df = make_runner(FakeData([[1]], size=2), 1)
    with pytest.raises(RuntimeError, match="reset_state"):
        list(df)
    df.reset_state()
    with pytest.raises(RuntimeError, match=r"reset_state\(\) was called twice"):
        df.reset_state()


def test_close_stops_the_workers(make_runner):
    df = make_runner(FakeData([[1]], size=2), 2)
    df.reset_state()
    pids = [w.pid for w in df._group.workers]
    assert all(alive(p) for p in pids)
    df.close()
    assert wait_gone(pids)


def test_zmq_runner_without_pyzmq_names_the_packages_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "zmq", None)  # what `import zmq` sees when it is missing
    runner = MultiProcessRunnerZMQ(FakeData([[1]], size=2), num_proc=1)
    with pytest.raises(ImportError) as error:
        runner.reset_state()
    assert str(error.value) == (
        "MultiProcessRunnerZMQ needs pyzmq: `pip install pyzmq` (or `pip install "
        "'tfloop-train[dataflow]'`). MultiProcessRunner, MultiThreadRunner and MultiThreadMapData "
        "work without it.")


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="num_proc must be a positive int, got 0"):
        MultiProcessRunnerZMQ(FakeData([[1]]), num_proc=0)
    with pytest.raises(ValueError, match="num_prefetch must be a positive int"):
        MultiProcessRunner(FakeData([[1]]), num_prefetch=0, num_proc=1)
    assert PrefetchData is MultiProcessRunner and PrefetchDataZMQ is MultiProcessRunnerZMQ
    assert MultiProcessPrefetchData is MultiProcessRunner
    assert MultiThreadPrefetchData is MultiThreadRunner


def test_multi_thread_runner_collects_from_every_thread():
    df = MultiThreadRunner(lambda: DataFromList([[i] for i in range(6)], shuffle=False),
                           num_prefetch=3, num_thread=2)
    df.reset_state()
    out = [dp[0] for dp in df]
    assert len(out) == len(df) == 6 and set(out) <= set(range(6))
    df.close()


def test_multi_thread_runner_reraises_a_thread_exception():
    df = MultiThreadRunner(lambda: Failing(ok=1), num_prefetch=2, num_thread=1)
    df.reset_state()
    with pytest.raises(ValueError, match="the source is broken") as info:
        list(df)
    assert "MultiThreadRunner thread 0" in "".join(traceback.format_exception(info.value))
    with pytest.raises(TypeError, match="must return a DataFlow"):
        MultiThreadRunner(lambda: [1, 2], 2, 1)


SCRIPT = """
import faulthandler, os, signal, time
faulthandler.register(signal.SIGUSR1, all_threads=True)   # the test's view of a hang
# Ctrl-C raises KeyboardInterrupt as in a terminal, also under a test run started in the
# background: such a run ignores SIGINT, and Python then leaves it ignored in this script.
signal.signal(signal.SIGINT, signal.default_int_handler)
from tfloop.dataflow import (DataFromList, FakeData, MultiProcessMapAndBatchData,
                             MultiProcessMapData, MultiProcessRunner, MultiProcessRunnerZMQ)
flows = [MultiProcessRunnerZMQ(FakeData([[100]], size=10 ** 6), num_proc=2),
         MultiProcessRunner(FakeData([[100]], size=10 ** 6), num_prefetch=4, num_proc=2),
         MultiProcessMapData(DataFromList([[i] for i in range(100)]), 2, lambda dp: dp),
         MultiProcessMapAndBatchData(DataFromList([[i] for i in range(100)]), 2, lambda dp: dp, 4)]
for df in flows:
    df.reset_state()
print("PIDS", *[w.pid for df in flows for w in df._group.workers], flush=True)
iterators = [iter(df) for df in flows]
print("READY", flush=True)
while True:
    for itr in iterators:
        next(itr)
    time.sleep(0.001)
"""


def test_ctrl_c_during_prefetch_shuts_everything_down(tmp_path):
    proc = start_script(SCRIPT, tmp_path)
    pids = [int(p) for p in read_until(proc, "PIDS ").split()]
    read_until(proc, "READY")
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=scaled_timeout(10))
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"the script did not exit after Ctrl-C; its threads:\n{err[-6000:]}"
                             ) from None
    assert "KeyboardInterrupt" in err and proc.returncode != 0
    assert wait_gone(pids, timeout=scaled_timeout(10)), [p for p in pids if alive(p)]


@pytest.mark.slow
def test_workers_exit_when_the_parent_is_killed(tmp_path):
    proc = start_script(SCRIPT, tmp_path)
    pids = [int(p) for p in read_until(proc, "PIDS ").split()]
    read_until(proc, "READY")
    proc.kill()
    proc.wait(timeout=scaled_timeout(5))
    assert wait_gone(pids, timeout=scaled_timeout(10)), [p for p in pids if alive(p)]
