"""Checkpoint stall: how much longer training takes around a save, by model size.

The model: ``--vars`` float32 variables of ``size / vars`` bytes each, and a training step that
updates every one of them in place (``ResourceApplyGradientDescent`` with a fixed delta kept in a
local variable, so the step allocates nothing and moves about 3x the model's bytes). Methods:

* ``tfloop_sync``: ``ModelSaver(background=False)``, the write in the training thread (the
  behaviour before background writes);
* ``tfloop_background``: ``ModelSaver()``: a snapshot between two steps, the write in a thread;
* ``tf_async``: TensorFlow's asynchronous checkpoint, eager: ``tf.train.CheckpointManager`` of a
  ``tf.train.Checkpoint`` saved with ``CheckpointOptions(experimental_enable_async_checkpoint=
  True)``, the step a ``tf.function`` running the same update.

The stall of a save at step ``s`` is the wall time of the ``--window`` steps after it (the save
call, the copy-on-write of the next step, the write's competition for the cores) minus
``--window`` times the median step time of the ``--base`` steps before it; at the end of the
window the method waits for the write, and that wait counts too. The table also gives how long
the save call itself took (what a timer around the call sees). Every method saves
``--saves`` times (``max_to_keep=2``); the first save of each run is left out (the meta graph,
TensorFlow's first async save sets up its copies). Methods run in rounds, one after the other in
an order that rotates, in one process; each run builds its model and frees it after.

Usage::

    python bench/checkpoint_stall.py --quick          # 10 MB and 100 MB, 2 rounds
    python bench/checkpoint_stall.py                  # 100 MB and 1 GB, 3 rounds

Results go to ``bench/results/checkpoint_stall.json`` and ``.md``.
"""
import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time

import report
from common import log, tf, tfv1

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
LEARNING_RATE = 1e-3
METHODS = {
    "tfloop_sync": "tfloop ModelSaver(background=False): the write in the training thread",
    "tfloop_background": "tfloop ModelSaver(): snapshot between two steps, write in a thread",
    "tf_async": "TF CheckpointManager.save(options=CheckpointOptions("
                "experimental_enable_async_checkpoint=True)), eager tf.function step",
}


def _shapes(size_mb, num_vars):
    per_var = int(size_mb * 2 ** 20 / 4 / num_vars)
    return [[per_var]] * num_vars


class Schedule:
    """Save at every ``gap``-th step (the first ``gap`` steps warm up); a window of ``window``
    steps follows each save, ``base`` unsaved steps come before the next one."""

    def __init__(self, saves, window, base):
        self.window, self.base, self.saves = window, base, saves
        self.gap = window + base + 1
        self.steps = self.gap * (saves + 1)

    def stalls(self, stamps, returned):
        """``[(stall s, baseline step s, save call s)]`` per save but the first, from the wall
        time at the end of every step (``stamps[i]``: after step ``i + 1``) and when each save
        call returned (``returned[s]``, the save after step ``s``)."""
        durations = [b - a for a, b in zip(stamps, stamps[1:])]    # durations[i]: step i + 2
        out = []
        for k in range(2, self.saves + 1):
            s = k * self.gap        # the save comes right after step s
            base = statistics.median(durations[s - self.base - 1:s - 1])
            window = sum(durations[s - 1:s - 1 + self.window])
            out.append((window - self.window * base, base, returned[s] - stamps[s - 1]))
        return out


# ---- tfloop --------------------------------------------------------------------------------------
def run_tfloop(size_mb, num_vars, schedule, background):
    import tfloop
    from tfloop.utils import logger
    workdir = tempfile.mkdtemp(prefix="tfloop-bench-ckpt-")
    trainer = tfloop.Trainer()
    with trainer.graph.as_default():
        updates = []
        for i, shape in enumerate(_shapes(size_mb, num_vars)):
            v = tfv1.get_variable(f"v{i}", shape, initializer=tfv1.zeros_initializer())
            d = tfv1.get_variable(f"d{i}", shape, initializer=tfv1.ones_initializer(),
                                  trainable=False, collections=[tfv1.GraphKeys.LOCAL_VARIABLES])
            updates.append(tf.raw_ops.ResourceApplyGradientDescent(
                var=v.handle, alpha=LEARNING_RATE, delta=d.read_value()))
        global_step = tfv1.train.get_or_create_global_step()
        trainer.train_op = tf.group(*updates, global_step.assign_add(1))
    saver = tfloop.ModelSaver(max_to_keep=2, background=background)
    stamps, returned = [], {}

    class Clock(tfloop.Callback):
        def _trigger_step(self):
            if self.global_step % schedule.gap == schedule.window:
                saver._writer.wait()        # the window ends when the write has finished
            stamps.append(time.perf_counter())

    class Returned(tfloop.Callback):
        def _trigger_step(self):
            if self.global_step % schedule.gap == 0:
                returned[self.global_step] = time.perf_counter()

    logger.set_logger_dir(os.path.join(workdir, "log"), action="keep")
    try:
        trainer.train([Clock(), tfloop.PeriodicTrigger(saver, every_k_steps=schedule.gap),
                       Returned()], [], None, None, steps_per_epoch=schedule.steps, max_epoch=1)
    finally:
        logger.unset_logger_dir()
        del trainer
        gc.collect()
        shutil.rmtree(workdir, ignore_errors=True)
    return schedule.stalls(stamps, returned)


# ---- TensorFlow's asynchronous checkpoint --------------------------------------------------------
def run_tf_async(size_mb, num_vars, schedule):
    workdir = tempfile.mkdtemp(prefix="tf-bench-ckpt-")
    variables = [tf.Variable(tf.zeros(s), name=f"v{i}")
                 for i, s in enumerate(_shapes(size_mb, num_vars))]
    deltas = [tf.Variable(tf.ones(s), trainable=False) for s in _shapes(size_mb, num_vars)]

    @tf.function
    def step():
        for v, d in zip(variables, deltas):
            tf.raw_ops.ResourceApplyGradientDescent(var=v.handle, alpha=LEARNING_RATE,
                                                    delta=d.read_value())

    checkpoint = tf.train.Checkpoint(**{f"v{i}": v for i, v in enumerate(variables)})
    manager = tf.train.CheckpointManager(checkpoint, workdir, max_to_keep=2)
    options = tf.train.CheckpointOptions(experimental_enable_async_checkpoint=True)
    stamps, returned = [], {}
    try:
        for i in range(1, schedule.steps + 1):
            step()
            if i % schedule.gap == schedule.window:
                checkpoint.sync()
            stamps.append(time.perf_counter())
            if i % schedule.gap == 0:
                manager.save(checkpoint_number=i, options=options)
                returned[i] = time.perf_counter()
        checkpoint.sync()
    finally:
        del checkpoint, manager, step
        variables.clear()
        deltas.clear()
        gc.collect()
        shutil.rmtree(workdir, ignore_errors=True)
    return schedule.stalls(stamps, returned)


def run_method(method, size_mb, num_vars, schedule):
    if method == "tf_async":
        return run_tf_async(size_mb, num_vars, schedule)
    return run_tfloop(size_mb, num_vars, schedule, background=method == "tfloop_background")


# ---- report --------------------------------------------------------------------------------------
def summarize(runs, methods, sizes):
    rows = []
    for size in sizes:
        for m in methods:
            mine = [r for r in runs if r["method"] == m and r["size_mb"] == size]
            stalls = [s for r in mine for s, _, _ in r["stalls"]]
            steps = [b for r in mine for _, b, _ in r["stalls"]]
            calls = [c for r in mine for _, _, c in r["stalls"]]
            ratios = []
            for r in mine:
                sync = [x for x in runs if x["method"] == "tfloop_sync" and x["size_mb"] == size
                        and x["round"] == r["round"]]
                if sync and m != "tfloop_sync":
                    sync_stall = statistics.median(s for s, _, _ in sync[0]["stalls"])
                    if sync_stall > 0:
                        ratios.append(statistics.median(s for s, _, _ in r["stalls"])
                                      / sync_stall)
            rows.append({"size_mb": size, "method": m, "saves": len(stalls),
                         "stall_ms_median": 1e3 * statistics.median(stalls),
                         "stall_ms_min": 1e3 * min(stalls), "stall_ms_max": 1e3 * max(stalls),
                         "step_ms_median": 1e3 * statistics.median(steps),
                         "save_call_ms_median": 1e3 * statistics.median(calls),
                         "round_ratio_to_sync": statistics.median(ratios) if ratios else None})
    return rows


def markdown(rows, info):
    headers = ["model", "method", "stall ms (median)", "min-max", "save call ms (median)",
               "step ms (median)",
               "median over rounds of stall / the round's `tfloop_sync`"]
    lines = [[f"{r['size_mb']:g} MB", r["method"], f"{r['stall_ms_median']:.0f}",
              f"{r['stall_ms_min']:.0f}-{r['stall_ms_max']:.0f}",
              f"{r['save_call_ms_median']:.0f}", f"{r['step_ms_median']:.0f}",
              f"{r['round_ratio_to_sync']:.3f}" if r["round_ratio_to_sync"] is not None else "-"]
             for r in rows]
    return "\n".join([
        f"# Checkpoint stall ({info['date']})",
        "",
        report.machine_line(info),
        f"{info['vars']} float32 variables updated in place every step; {info['rounds']} rounds, "
        f"{info['saves'] - 1} timed saves per method and round; window {info['window']} steps "
        f"after each save, baseline the {info['base']} steps before it.",
        "",
        report.table(headers, lines),
        "",
    ] + [f"- `{m}`: {METHODS[m]}" for m in info["methods"]]) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--sizes", default=None, help="model sizes in MB, comma-separated "
                        "(default 100,1024; 10,100 with --quick)")
    parser.add_argument("--quick", action="store_true", help="small models, 2 rounds")
    parser.add_argument("--rounds", type=int, default=None, help="default 3 (2 with --quick)")
    parser.add_argument("--saves", type=int, default=3, help="saves per run (the first untimed)")
    parser.add_argument("--window", type=int, default=12, help="steps timed after each save")
    parser.add_argument("--base", type=int, default=5, help="steps before each save, the baseline")
    parser.add_argument("--vars", type=int, default=8, help="number of variables")
    parser.add_argument("--name", default="checkpoint_stall", help="results file name")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    sizes = [float(s) for s in (args.sizes or ("10,100" if args.quick else "100,1024")).split(",")]
    rounds = args.rounds or (2 if args.quick else 3)
    if args.saves < 2:
        parser.error("--saves must be at least 2 (the first is not timed)")
    schedule = Schedule(args.saves, args.window, args.base)
    info = report.machine_info()
    info.update(methods=methods, sizes_mb=sizes, rounds=rounds, saves=args.saves,
                window=args.window, base=args.base, vars=args.vars)
    runs = []
    for r in range(rounds):
        for size in sizes:
            for method in methods[r % len(methods):] + methods[:r % len(methods)]:
                stalls = run_method(method, size, args.vars, schedule)
                runs.append({"method": method, "size_mb": size, "round": r, "stalls": stalls,
                             "loadavg": os.getloadavg()})
                log(f"round {r + 1}/{rounds} {size:g} MB {method}: stalls "
                    + ", ".join(f"{1e3 * s:.0f} ms (call {1e3 * c:.0f})" for s, _, c in stalls)
                    + f" (step {1e3 * stalls[0][1]:.0f} ms, load {os.getloadavg()[0]:.1f})")
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(runs, methods, sizes)
    report.write_json(os.path.join(args.out, args.name + ".json"),
                      {"info": info, "summary": rows, "runs": runs})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
