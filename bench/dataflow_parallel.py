"""Throughput of the parallel DataFlows on a map function that holds the GIL (pure Python).

Usage::

    python bench/dataflow_parallel.py                 # 5 interleaved rounds of 300 datapoints
    python bench/dataflow_parallel.py --quick         # 2 rounds of 100
    python bench/dataflow_parallel.py --work 40000 --workers 4

Every method maps the same datapoints with the same function (``--work`` iterations of a Python
loop, about 2 ms). One process (``MapData``, iterated by the consumer) is the baseline; the
methods are timed one after the other, in a rotating order, for ``--rounds`` rounds, so that the
load of a shared machine hits every method alike; each timing starts a fresh flow (forking is not
timed), drains what its workers buffered, then times the steady state. The ratio is taken per
round against that round's baseline; the table shows the median.
Results go to ``bench/results/dataflow_parallel.json`` and ``.md``.
"""
import argparse
import itertools
import os
import statistics
import sys
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
RESULTS = os.path.join(HERE, "results")

from tfloop.dataflow import (DataFromList, MapData, MultiProcessMapData,  # noqa: E402
                             MultiProcessRunnerZMQ, MultiThreadMapData)

DESCRIPTIONS = {
    "one_process": "MapData in the consumer process (baseline)",
    "mp_map_strict": "MultiProcessMapData(ds, W, f, strict=True): ordered",
    "mp_map": "MultiProcessMapData(ds, W, f): unordered, endless",
    "mp_runner": "MultiProcessRunnerZMQ(MapData(ds, f), W)",
    "thread_map": "MultiThreadMapData(ds, W, f): threads share the GIL",
}


def make_work(iterations):
    def work(dp):
        total = 0
        for k in range(iterations):
            total += k * k % 7
        return [dp[0], total]
    return work


def build(method, n, workers, work):
    source = DataFromList([[i] for i in range(n)], shuffle=False)
    if method == "one_process":
        return MapData(source, work)
    if method == "mp_map_strict":
        return MultiProcessMapData(source, workers, work, buffer_size=4 * workers, strict=True)
    if method == "mp_map":
        return MultiProcessMapData(source, workers, work, buffer_size=4 * workers)
    if method == "mp_runner":
        return MultiProcessRunnerZMQ(MapData(source, work), workers)
    if method == "thread_map":
        return MultiThreadMapData(source, workers, work, buffer_size=4 * workers)
    raise ValueError(f"unknown method {method!r}; choose from {', '.join(DESCRIPTIONS)}")


def take(df, n):
    start = time.perf_counter()
    count = sum(1 for _ in itertools.islice(df, n))
    elapsed = time.perf_counter() - start
    if count != n:
        raise RuntimeError(f"got {count} datapoints, expected {n}")
    return n / elapsed


def run_once(method, args, work):
    """Start a fresh flow, let it reach steady state, time ``args.datapoints``, stop it.

    Only one method runs at a time, so no method's workers compete with another's timing. The
    warm-up takes enough datapoints to drain what the workers buffered before timing starts
    (the ZMQ pipes of MultiProcessRunnerZMQ hold about 50 per end and worker).
    """
    warmup = 20 if method in ("one_process", "mp_map_strict") else 50 + 100 * args.workers
    df = build(method, args.datapoints + warmup, args.workers, work)
    df.reset_state()
    itr = iter(df)
    take(itr, warmup)
    speed = take(itr, args.datapoints)
    getattr(df, "close", lambda: None)()
    return speed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(DESCRIPTIONS))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--work", type=int, default=40000, help="Python loop iterations per map")
    parser.add_argument("--datapoints", type=int, default=300, help="per method and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="dataflow_parallel")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.datapoints, args.rounds = 100, 2
    methods = args.methods.split(",")
    if "one_process" not in methods:
        methods.insert(0, "one_process")
    work = make_work(args.work)

    load_before = os.getloadavg()
    speeds = {m: [] for m in methods}
    ratios = {m: [] for m in methods}
    for r in range(args.rounds):
        order = methods[r % len(methods):] + methods[:r % len(methods)]
        this_round = {m: run_once(m, args, work) for m in order}
        for m in methods:
            speeds[m].append(this_round[m])
            ratios[m].append(this_round[m] / this_round["one_process"])
        print(f"round {r + 1}: " + ", ".join(f"{m} {this_round[m]:.0f}/s" for m in methods),
              flush=True)
    load_after = os.getloadavg()

    info = report.machine_info()
    rows = []
    for m in methods:
        rows.append([f"`{m}`", DESCRIPTIONS[m], f"{statistics.median(speeds[m]):.0f}",
                     f"{min(speeds[m]):.0f}-{max(speeds[m]):.0f}",
                     f"**{statistics.median(ratios[m]):.2f}x**"])
    text = "\n".join([
        f"MultiProcess DataFlows, {args.workers} workers, map = {args.work} Python loop "
        f"iterations ({1e3 / statistics.median(speeds['one_process']):.2f} ms per datapoint in "
        f"one process); {args.rounds} interleaved rounds of {args.datapoints} datapoints.",
        "",
        report.machine_line(info),
        f"Load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after.",
        "",
        report.table(["method", "what", "datapoints/s (median)", "min-max",
                      "vs one process (median of per-round ratios)"], rows),
        ""])
    print(text)
    report.write_json(os.path.join(args.out, f"{args.name}.json"), {
        "machine": info, "settings": vars(args), "load_average": [load_before, load_after],
        "speeds": speeds, "ratios": ratios})
    report.write_text(os.path.join(args.out, f"{args.name}.md"), text)


if __name__ == "__main__":
    main()
