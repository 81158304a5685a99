"""Seconds the ``tfloop`` command takes on a log directory with thousands of checkpoints.

Usage::

    python bench/cli_logdir.py                    # 3000 checkpoints, 3 repeats
    python bench/cli_logdir.py --checkpoints 300 --repeats 1

Each command runs in a fresh process (``python -m tfloop ...``), so interpreter start and imports
count, as they do for a user. The log directory is written by hand the way a run leaves it: per
checkpoint an index, a data shard and a resume state, plus ``stats.json``, ``status.json`` and a
best checkpoint. ``tfloop export --help`` is timed too (it must not import TensorFlow). Results
go to ``bench/results/cli_logdir.json`` and ``cli_logdir.md``.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def make_logdir(path, checkpoints):
    os.makedirs(path)
    for step in range(1, checkpoints + 1):
        prefix = os.path.join(path, f"model-{step}")
        for suffix, size in ((".index", 100), (".data-00000-of-00001", 2000)):
            with open(prefix + suffix, "wb") as f:
                f.write(b"x" * size)
        with open(prefix + ".resume.json", "w") as f:
            json.dump({"epoch": step, "local_step": 0, "global_step": step}, f)
    with open(os.path.join(path, "stats.json"), "w") as f:
        json.dump([{"epoch_num": e, "global_step": e, "cost": 1 / e}
                   for e in range(1, checkpoints + 1)], f)
    with open(os.path.join(path, "status.json"), "w") as f:
        json.dump({"state": "finished", "pid": 1, "host": "bench", "hyper_params": []}, f)
    with open(os.path.join(path, "min-cost.json"), "w") as f:
        json.dump({"stat": "cost", "mode": "min", "checkpoints": [
            {"rank": 1, "checkpoint": "min-cost", "global_step": checkpoints, "value": 0.1}]}, f)


def seconds(argv, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "tfloop"] + argv, capture_output=True,
                             text=True)
        times.append(time.perf_counter() - start)
        if out.returncode != 0:
            raise SystemExit(f"tfloop {' '.join(argv)} failed: {out.stderr[-2000:]}")
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoints", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    load_start = os.getloadavg()
    with tempfile.TemporaryDirectory() as work:
        logdir = os.path.join(work, "run")
        make_logdir(logdir, args.checkpoints)
        commands = {"ckpts": ["ckpts", logdir], "info": ["info", logdir],
                    "stats --best": ["stats", logdir, "--best"],
                    "export --help": ["export", "--help"]}
        results = {name: seconds(argv, args.repeats) for name, argv in commands.items()}
    info = report.machine_info()
    info["loadavg_start"] = load_start
    info["loadavg_end"] = os.getloadavg()
    data = {"machine": info, "checkpoints": args.checkpoints, "repeats": args.repeats,
            "median_seconds": results}
    rows = [[f"tfloop {name}", f"{value:.2f}"] for name, value in results.items()]
    text = (f"# tfloop on a log directory with {args.checkpoints} checkpoints\n\n"
            f"{report.machine_line(info)}\n\nMedian of {args.repeats} fresh processes, "
            "seconds (interpreter start and imports included):\n\n"
            + report.table(["command", "seconds"], rows) + "\n")
    os.makedirs(RESULTS, exist_ok=True)
    report.write_json(os.path.join(RESULTS, "cli_logdir.json"), data)
    report.write_text(os.path.join(RESULTS, "cli_logdir.md"), text)
    print(text)


if __name__ == "__main__":
    main()
