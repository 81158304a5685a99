"""Throughput of the parallel DataFlows on a map function that holds the GIL (pure Python).

Usage::

    python bench/dataflow_parallel.py                 # 7 rounds of 200 datapoints per method
    python bench/dataflow_parallel.py --quick         # 2 rounds of 100
    python bench/dataflow_parallel.py --work 40000 --workers 4
    python bench/dataflow_parallel.py --kind sleep --name dataflow_parallel_sleep

Every method maps the same datapoints with the same function (``--work`` iterations of a Python
loop, about 2 ms). One process (``MapData``, iterated by the consumer) is the baseline; the
parallel methods are timed in a rotating order for ``--rounds`` rounds, each right after a run of
the baseline, and the ratio is taken within each such pair (so that both see the same load of a
shared machine); the table shows the median ratio, and the best throughput of each method over
the best baseline run (the least disturbed runs of each: a conservative figure when the load of a
shared machine slows the single process more than the workers). Each timing starts a fresh flow
(forking is not timed), drains what its workers buffered, then times the steady state.
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

from tfloop.dataflow import (  # noqa: E402
    DataFromList,
    MapData,
    MultiProcessMapData,
    MultiProcessRunnerZMQ,
    MultiThreadMapData,
)

DESCRIPTIONS = {
    "one_process": "MapData in the consumer process (baseline)",
    "mp_map_strict": "MultiProcessMapData(ds, W, f, strict=True): ordered",
    "mp_map": "MultiProcessMapData(ds, W, f): unordered, endless",
    "mp_runner": "MultiProcessRunnerZMQ(MapData(ds, f), W)",
    "thread_map": "MultiThreadMapData(ds, W, f): threads share the GIL",
}


def make_work(iterations, kind="python"):
    """The map function: ``iterations`` of a Python loop (holds the GIL), or with
    ``kind="sleep"`` a sleep of the same length in one process (uses no CPU: it shows what the
    loader itself costs, whatever the load of the machine)."""
    def work(dp):
        total = 0
        for k in range(iterations):
            total += k * k % 7
        return [dp[0], total]
    if kind == "python":
        return work
    start = time.perf_counter()
    for _ in range(20):
        work([0])
    seconds = (time.perf_counter() - start) / 20

    def sleep(dp):
        time.sleep(seconds)
        return [dp[0], 0]
    return sleep


def build(method, n, workers, work):
    source = DataFromList([[i] for i in range(n)], shuffle=False)
    if method == "one_process":
        return MapData(source, work)
    if method == "mp_map_strict":
        return MultiProcessMapData(source, workers, work, strict=True)
    if method == "mp_map":
        return MultiProcessMapData(source, workers, work)
    if method == "mp_runner":
        return MultiProcessRunnerZMQ(MapData(source, work), workers)
    if method == "thread_map":
        return MultiThreadMapData(source, workers, work)
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
    (the ZMQ pipes of MultiProcessRunnerZMQ hold about 50 per end and worker; the parallel maps
    keep their default ``buffer_size=200`` in flight).
    """
    warmup = 20 if method in ("one_process", "mp_map_strict") else 250
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
    parser.add_argument("--kind", choices=["python", "sleep"], default="python",
                        help="a GIL-bound Python loop, or a sleep as long (the loader's own cost)")
    parser.add_argument("--datapoints", type=int, default=200, help="per method and round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="dataflow_parallel")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    if args.quick:
        args.datapoints, args.rounds = 100, 2
    methods = args.methods.split(",")
    if "one_process" not in methods:
        methods.insert(0, "one_process")
    work = make_work(args.work, args.kind)

    load_before = os.getloadavg()
    speeds = {m: [] for m in methods}
    ratios = {m: [] for m in methods}
    others = [m for m in methods if m != "one_process"]
    for r in range(args.rounds):
        order = others[r % len(others):] + others[:r % len(others)]
        line = []
        for m in order:  # each method right after a baseline run: the pair sees the same load
            base = run_once("one_process", args, work)
            speed = run_once(m, args, work)
            speeds["one_process"].append(base)
            ratios["one_process"].append(1.0)
            speeds[m].append(speed)
            ratios[m].append(speed / base)
            line.append(f"{m} {speed:.0f}/s vs {base:.0f}/s")
        print(f"round {r + 1}: " + ", ".join(line), flush=True)
    load_after = os.getloadavg()

    info = report.machine_info()
    rows = []
    for m in methods:
        rows.append([f"`{m}`", DESCRIPTIONS[m], f"{statistics.median(speeds[m]):.0f}",
                     f"{min(speeds[m]):.0f}-{max(speeds[m]):.0f}",
                     f"{statistics.median(ratios[m]):.2f}x",
                     f"**{max(speeds[m]) / max(speeds['one_process']):.2f}x**"])
    text = "\n".join([
        f"MultiProcess DataFlows, {args.workers} workers, map = "
        + (f"{args.work} Python loop iterations" if args.kind == "python" else
           f"a sleep as long as {args.work} Python loop iterations")
        + f" ({1e3 / statistics.median(speeds['one_process']):.2f} ms per datapoint in "
        f"one process); {args.rounds} rounds of {args.datapoints} datapoints, each method paired "
        "with a baseline run just before it.",
        "",
        report.machine_line(info),
        f"Load average (1 min) {load_before[0]:.1f} before, {load_after[0]:.1f} after.",
        "",
        report.table(["method", "what", "datapoints/s (median)", "min-max",
                      "vs one process (median of paired ratios)",
                      "best vs best one-process run"], rows),
        ""])
    print(text)
    report.write_json(os.path.join(args.out, f"{args.name}.json"), {
        "machine": info, "settings": vars(args), "load_average": [load_before, load_after],
        "speeds": speeds, "ratios": ratios})
    report.write_text(os.path.join(args.out, f"{args.name}.md"), text)


if __name__ == "__main__":
    main()
