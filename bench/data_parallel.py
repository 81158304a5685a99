"""Per-step overhead of the data-parallel trainers, against SimpleTrainer in the same run.

Usage::

    python bench/data_parallel.py             # every method, 3 repeats (~3 min on 2 CPU cores)
    python bench/data_parallel.py --quick     # fewer steps, one repeat (~1 min)
    python bench/data_parallel.py --methods dist_ps:1,dist_ps:2 --repeats 5

The model is a 4-8-1 MLP (tanh, squared error, plain SGD) and every step takes 8 datapoints in
all, split evenly over every tower of every worker: a step is almost all overhead, so what is
measured is what combining the towers costs, not compute. Methods, named ``<row>:<n>``:

* ``simple:1``: ``SimpleTrainer``, the reference; always measured.
* ``replicated_add_n:N``, ``replicated_collective:N``: ``SyncMultiGPUTrainerReplicated`` with that
  all-reduce mode on N logical CPU devices (the trainer's default session config has
  ``ConfigProto(device_count={'CPU': N})``).
* ``ps_devices:N``: ``SyncMultiGPUTrainerParameterServer`` on N logical CPU devices, variables on
  ``/cpu:0``.
* ``dist_replicated:W``: W worker processes, ``DistributedTrainerReplicated``.
* ``dist_ps:W``: 1 ps process and W worker processes, ``DistributedTrainerParameterServer``.

Each repeat runs every single-process method in one fresh process, one after the other (each
with its own graph and session; the order rotates with the repeat), then each cluster as real
processes on 127.0.0.1 (free ports): every task runs this script with its own ``TF_CONFIG`` and
``tfloop.trainer_from_tf_config(gpus=1)``, so a worker has one tower and the ps serves until the
workers finish, then exits; every task must exit with status 0. No default callbacks or monitors.

Time per step: ``time.perf_counter()`` at every ``trigger_step`` (on the chief), from the end of
the last warm-up step to the end of the last step. The table gives, per method, the median over
the repeats, their min-max, and the ratio of the median to that of ``simple:1``. Results go to
``bench/results/<name>.json`` (every run, the machine, the settings) and ``<name>.md`` (the table),
``data_parallel`` by default. Compare ratios taken in one run only: absolute numbers move a lot
between runs on a shared machine.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import common  # first: it quiets TensorFlow's logging before TensorFlow is imported
import numpy as np
import report
import tensorflow as tf
from common import tfv1

import tfloop

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
N_IN, N_HIDDEN = 4, 8
BATCH = 8               # datapoints per step, over every tower of every worker
DATA_BATCHES = 32
SCHEDULES = {False: (100, 400), True: (50, 200)}    # --quick -> (warm-up, timed) steps
TASK_TIMEOUT_S = 60     # a step that waits longer on another task fails (create_server)
REFERENCE = "simple:1"

# row -> (the trainer as the table names it, what n counts, the n measured)
ROWS = {
    "simple": ("`SimpleTrainer`", "device", [1]),
    "replicated_add_n": ("`SyncMultiGPUTrainerReplicated`, `add_n`", "device", [1, 2, 4]),
    "replicated_collective": ("`SyncMultiGPUTrainerReplicated`, `collective`", "device", [2, 4]),
    "ps_devices": ("`SyncMultiGPUTrainerParameterServer`", "device", [1, 2, 4]),
    "dist_replicated": ("`DistributedTrainerReplicated`", "worker", [1, 2]),
    "dist_ps": ("`DistributedTrainerParameterServer`, 1 ps", "worker", [1, 2]),
}
METHODS = [f"{row}:{n}" for row, (_, _, ns) in ROWS.items() for n in ns]
SINGLE_PROCESS = {
    "simple": lambda n: tfloop.SimpleTrainer(),
    "replicated_add_n": lambda n: tfloop.SyncMultiGPUTrainerReplicated(n, mode="add_n"),
    "replicated_collective": lambda n: tfloop.SyncMultiGPUTrainerReplicated(n, mode="collective"),
    "ps_devices": lambda n: tfloop.SyncMultiGPUTrainerParameterServer(n),
}
CLUSTER_PS = {"dist_replicated": 0, "dist_ps": 1}   # cluster row -> its number of ps tasks


def parse_method(method):
    row, _, n = method.partition(":")
    return row, int(n)


class MLP(tfloop.ModelDesc):
    """4 -> 8 (tanh) -> 1, squared error, SGD on a ``learning_rate`` variable."""

    def inputs(self):
        return [tf.TensorSpec([None, N_IN], tf.float32, "x"),
                tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w1 = tfv1.get_variable("fc1/W", [N_IN, N_HIDDEN])
        b1 = tfv1.get_variable("fc1/b", [N_HIDDEN], initializer=tfv1.zeros_initializer())
        w2 = tfv1.get_variable("fc2/W", [N_HIDDEN, 1])
        pred = tf.squeeze(tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2), 1)
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return common.learning_rate_optimizer()


def make_dataset(per_tower):
    """A function building the training data in batches of ``per_tower``, this worker's shard."""
    rng = np.random.RandomState(common.SEED)
    x = rng.randn(BATCH * DATA_BATCHES, N_IN).astype(np.float32)
    y = np.sin(x.sum(axis=1)).astype(np.float32)

    def make():
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(per_tower, drop_remainder=True)
        return tfloop.shard_dataset(ds)     # the whole dataset without TF_CONFIG
    return make


class StepTimes(tfloop.Callback):
    """``time.perf_counter()`` after every training step."""

    def __init__(self):
        self.times = []

    def _trigger_step(self):
        self.times.append(time.perf_counter())


def train(trainer, towers_per_step, quick):
    """Train the MLP for the warm-up and timed steps; return the timed steps' ms per step (None
    on a non-chief worker, which does not time)."""
    warmup, timed = SCHEDULES[quick]
    timer = StepTimes()
    config = tfloop.TrainConfig(
        model=MLP(), data=tfloop.DatasetInput(make_dataset(BATCH // towers_per_step)),
        callbacks=[timer] if trainer.is_chief else [], extra_callbacks=[], monitors=[],
        steps_per_epoch=warmup + timed, max_epoch=1)
    tfloop.launch_train_with_config(config, trainer)
    if not trainer.is_chief:
        return None
    return 1e3 * (timer.times[-1] - timer.times[warmup - 1]) / timed


def child(args):
    """Run the single-process methods (comma-separated) one after the other in this process;
    print one JSON line per method."""
    for method in args.child.split(","):
        row, n = parse_method(method)
        ms = train(SINGLE_PROCESS[row](n), n, args.quick)
        print(json.dumps({"method": method, "ms_per_step": ms}), flush=True)


def task(args):
    """One task of a cluster (``TF_CONFIG`` set by the parent): a ps serves until the workers
    finish; a worker trains, and the chief prints its ms per step as a JSON line."""
    trainer = tfloop.trainer_from_tf_config(gpus=1, timeout_s=TASK_TIMEOUT_S,
                                            startup_timeout_s=args.timeout)
    if trainer is None:
        return
    ms = train(trainer, trainer.task.num_workers, args.quick)
    if trainer.is_chief:
        print(json.dumps({"method": args.task, "ms_per_step": ms}), flush=True)


def script_command(role, method, quick, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), role, method, "--timeout", str(timeout)]
    return cmd + ["--quick"] if quick else cmd


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_single_process(methods, quick, timeout):
    """The single-process ``methods`` in one fresh process, without ``TF_CONFIG``."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"}
    proc = subprocess.run(script_command("--child", ",".join(methods), quick, timeout),
                          capture_output=True, env=env,
                          timeout=timeout, text=True)
    if proc.returncode != 0:
        raise RuntimeError("{} failed (exit {}):\n{}".format(
            ",".join(methods), proc.returncode, proc.stderr[-4000:]))
    return json_lines(proc.stdout)


def free_addresses(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    addresses = [f"127.0.0.1:{s.getsockname()[1]}" for s in sockets]
    for s in sockets:
        s.close()
    return addresses


def start_tasks(cluster, method, quick, timeout, logdir):
    """One process per task of ``cluster``; each writes its output to ``<logdir>/<task>.log``."""
    procs = {}
    for job, addresses in cluster.items():
        for index in range(len(addresses)):
            name = f"{job}{index}"
            env = dict(os.environ, TF_CONFIG=json.dumps(
                {"cluster": cluster, "task": {"type": job, "index": index}}))
            with open(os.path.join(logdir, name + ".log"), "w") as log:
                procs[name] = subprocess.Popen(script_command("--task", method, quick, timeout),
                                               stdout=log, stderr=subprocess.STDOUT, env=env)
    return procs


def wait_for_exit(procs, timeout, logdir):
    """Wait for every task; raise unless all exited with status 0 within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    failed = []
    for name, proc in procs.items():
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.returncode != 0:
            failed.append(name)
    if failed:
        logs = []
        for name in failed:
            with open(os.path.join(logdir, name + ".log")) as f:
                logs.append(f"--- {name} (exit {procs[name].returncode}):\n{f.read()[-3000:]}")
        raise RuntimeError("cluster tasks {} did not exit cleanly:\n{}".format(
            ", ".join(failed), "\n".join(logs)))


def run_cluster(method, quick, timeout):
    """``method`` as worker (and ps) processes on 127.0.0.1; the chief's result."""
    row, workers = parse_method(method)
    addresses = free_addresses(workers + CLUSTER_PS[row])
    cluster = {"worker": addresses[:workers]}
    if CLUSTER_PS[row]:
        cluster["ps"] = addresses[workers:]
    with tempfile.TemporaryDirectory(prefix="tfloop-bench-") as logdir:
        wait_for_exit(start_tasks(cluster, method, quick, timeout, logdir), timeout, logdir)
        with open(os.path.join(logdir, "worker0.log")) as f:
            return json_lines(f.read())


def run_repeat(methods, repeat, quick, timeout):
    """Every method once: the single-process ones in one process, then each cluster; the order
    rotates with ``repeat``."""
    shift = repeat % len(methods)
    order = methods[shift:] + methods[:shift]
    single = [m for m in order if parse_method(m)[0] in SINGLE_PROCESS]
    clusters = [m for m in order if parse_method(m)[0] in CLUSTER_PS]
    results = run_single_process(single, quick, timeout)     # simple:1 is always there
    for method in clusters:
        results += run_cluster(method, quick, timeout)
    return results


def summarize(runs, methods):
    rows = []
    for method in methods:
        times = [r["ms_per_step"] for r in runs if r["method"] == method]
        row, n = parse_method(method)
        rows.append({"method": method, "trainer": ROWS[row][0], "n": n, "unit": ROWS[row][1],
                     "repeats": len(times), "ms_per_step_median": statistics.median(times),
                     "ms_per_step_min": min(times), "ms_per_step_max": max(times)})
    reference = next(r["ms_per_step_median"] for r in rows if r["method"] == REFERENCE)
    for row in rows:
        row["ratio"] = row["ms_per_step_median"] / reference
    return rows


def markdown(rows, info):
    headers = ["trainer", "on", "ms/step (median)", "min-max", "ratio to `SimpleTrainer`"]
    lines = [[row["trainer"], "{} {}{}".format(row["n"], row["unit"], "s" if row["n"] > 1 else ""),
              "{:.2f}".format(row["ms_per_step_median"]),
              "{:.2f}-{:.2f}".format(row["ms_per_step_min"], row["ms_per_step_max"]),
              "{:.2f}".format(row["ratio"])] for row in rows]
    return "\n".join([
        "# Data-parallel step overhead ({})".format(info["date"]),
        "",
        report.machine_line(info),
        "4-8-1 MLP, {} datapoints per step over all towers; {} repeat(s) of {} warm-up + {} "
        "timed steps, timed from `trigger_step` to `trigger_step`, without default callbacks or "
        "monitors; ratio = median ms/step / median ms/step of `SimpleTrainer`. Devices are "
        "logical CPU devices of one process; workers are processes on 127.0.0.1 with one tower "
        "each.".format(BATCH, info["repeats"], info["warmup_steps"], info["timed_steps"]),
        "",
        report.table(headers, lines),
        "",
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--repeats", type=int, default=None, help="3 by default, 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="fewer steps and one repeat")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    parser.add_argument("--name", default="data_parallel",
                        help="results file name, without extension")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per process")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--task", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if args.task:
        return task(args)
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            parser.error("unknown method {!r}; known: {}".format(m, ", ".join(METHODS)))
    if REFERENCE not in methods:
        methods.insert(0, REFERENCE)
    repeats = args.repeats or (1 if args.quick else 3)
    warmup, timed = SCHEDULES[args.quick]
    info = report.machine_info()
    info.update(methods=methods, repeats=repeats, quick=args.quick, warmup_steps=warmup,
                timed_steps=timed, batch=BATCH)
    start = time.monotonic()
    runs = []
    for r in range(repeats):
        common.log(f"repeat {r + 1}/{repeats}")
        for result in run_repeat(methods, r, args.quick, args.timeout):
            result["repeat"] = r
            runs.append(result)
            common.log("  {method}: {ms_per_step:.3f} ms/step".format(**result))
    info.update(loadavg_end=os.getloadavg(), wall_s=time.monotonic() - start)
    rows = summarize(runs, methods)
    os.makedirs(args.out, exist_ok=True)
    report.write_json(os.path.join(args.out, args.name + ".json"),
                      {"info": info, "summary": rows, "runs": runs})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
