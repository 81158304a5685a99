"""What a checkpoint of 1 GB costs training: tfloop's ModelSaver against TensorFlow's savers.

The model: 16 float32 variables of 62.5 MB (1 GB), trained by SGD on ``sum_k sum(v_k * s)``
(``s`` a random scalar), so every variable is updated at every step. Training runs in periods of
``--steps`` steps (4); in a period "with saves" a checkpoint is saved after its last step. The
cost of a save is the median period's wall time with saves minus the median period without
(the lead's definition); the table also gives the mean over the whole block with saves (its last
period waits for the last write: what a background write costs in all), minus the mean without.

Methods, each in its own graph or eager state, one at a time:

* ``tfloop``: ``ModelSaver()``, the defaults: a snapshot between two steps, the write in a thread.
* ``tfloop_tf_writer``: ``ModelSaver()`` with TensorFlow's ``SaveV2`` writing the snapshot
  (the in-place writer of ``checkpoint_inplace.py`` off): what the in-place writer gains.
* ``tfloop_sync``: ``ModelSaver(background=False)``.
* ``tfloop_new_files``: ``ModelSaver()`` keeping its default 10 checkpoints, so that no
  checkpoint of the run is deleted and every write goes into a new data file (a short run's
  case; the other tfloop methods keep 2, as ``saver`` does).
* ``saver``: the raw graph loop with ``tf.compat.v1.train.Saver.save`` after the period.
* ``ckpt_write``: an eager ``tf.function`` step and ``tf.train.Checkpoint.write``.
* ``ckpt_async``: the same with ``tf.train.CheckpointOptions(
  experimental_enable_async_checkpoint=True)`` (the next write waits for the previous one; the
  block's end waits with ``Checkpoint.sync``).

A run: warm-up periods, one untimed save (the first allocates buffers, writes the meta graph),
then blocks without and with saves, alternating, ``--periods`` periods each. Every round runs
every method in an order that rotates; a 1 GB ``numpy.copyto`` (one memcpy of the model into
memory already mapped) is timed in each round for reference.

Usage::

    python bench/save_cost.py                 # every method, 3 rounds
    python bench/save_cost.py --methods tfloop,ckpt_write --rounds 5

Results go to ``bench/results/save_cost.json`` and ``.md`` (``--name`` to change).
"""
import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time

import model_shapes
import numpy as np
import report
from common import log, tf, tfv1

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
METHODS = {
    "tfloop": "tfloop ModelSaver() (background write), SimpleTrainer with the default callbacks",
    "tfloop_tf_writer": "tfloop ModelSaver(), the snapshot written by TensorFlow's SaveV2",
    "tfloop_sync": "tfloop ModelSaver(background=False)",
    "tfloop_new_files": "tfloop ModelSaver() keeping 10 checkpoints: every write a new data file",
    "saver": "raw graph loop, tf.compat.v1.train.Saver(max_to_keep=2).save",
    "ckpt_write": "eager tf.function step, tf.train.Checkpoint.write",
    "ckpt_async": "eager tf.function step, tf.train.Checkpoint.write with CheckpointOptions("
                  "experimental_enable_async_checkpoint=True)",
}
LR = 0.01


class Plan:
    """Periods of ``steps`` steps: ``warmup`` periods (the last one saves, untimed), then
    ``blocks`` alternating without / with saves, ``periods`` periods each."""

    def __init__(self, steps, periods, blocks, warmup=2):
        self.steps, self.periods, self.warmup = steps, periods, warmup
        self.kinds = ["off" if b % 2 == 0 else "on" for b in range(blocks)]

    @property
    def total_periods(self):
        return self.warmup + self.periods * len(self.kinds)

    def kind(self, period):
        """``"warmup"``, ``"off"`` or ``"on"`` for period ``period`` (0-based)."""
        if period < self.warmup:
            return "warmup"
        return self.kinds[(period - self.warmup) // self.periods]

    def saves_after(self, period):
        return self.kind(period) == "on" or period == self.warmup - 1

    def waits_after(self, period):
        """Whether the write must have finished when ``period`` ends: after the warm-up's save
        and after each block's last save."""
        if period == self.warmup - 1:
            return True
        return self.kind(period) == "on" and (period - self.warmup + 1) % self.periods == 0


def drive(plan, step, save, wait):
    """Run ``plan`` with plain callables; return ``{"off": [s], "on": [s]}`` period times."""
    times = {"off": [], "on": []}
    for period in range(plan.total_periods):
        start = time.perf_counter()
        for _ in range(plan.steps):
            step()
        if plan.saves_after(period):
            save(period)
        if plan.waits_after(period):
            wait()
        if plan.kind(period) != "warmup":
            times[plan.kind(period)].append(time.perf_counter() - start)
    return times


# ---- graph mode ----------------------------------------------------------------------------------
def run_saver(plan, workdir):
    shape = model_shapes.variables_1gb()
    graph = tf.Graph()
    with graph.as_default():
        s = tfv1.data.make_one_shot_iterator(shape.data()).get_next()
        train_op = tfv1.train.GradientDescentOptimizer(LR).minimize(
            shape.cost(s), global_step=tfv1.train.get_or_create_global_step())
        saver = tfv1.train.Saver(max_to_keep=2)
        sess = tfv1.Session(graph=graph)
        sess.run(tfv1.global_variables_initializer())
    try:
        step = sess.make_callable(train_op)
        prefix = os.path.join(workdir, "model")

        def save(period):
            with graph.as_default():
                saver.save(sess, prefix, global_step=period, write_meta_graph=False)
        return drive(plan, step, save, lambda: None)
    finally:
        sess.close()


def run_tfloop(plan, workdir, background=True, in_place=True, max_to_keep=2):
    import tfloop
    from tfloop.callbacks import checkpoint_snapshot
    from tfloop.utils import logger
    shape = model_shapes.variables_1gb()
    saver = tfloop.ModelSaver(max_to_keep=max_to_keep, background=background)
    times = {"off": [], "on": []}

    class Periods(tfloop.Callback):
        """Saves and times the periods of ``plan``; listed after the saver."""

        def _before_train(self):
            self.start = time.perf_counter()

        def _trigger_step(self):
            if self.global_step % plan.steps:
                return
            period = self.global_step // plan.steps - 1
            if plan.saves_after(period):
                saver.trigger()
            if plan.waits_after(period):
                saver.checkpoint_at(self.global_step)     # waits for the write
            now = time.perf_counter()
            if plan.kind(period) != "warmup":
                times[plan.kind(period)].append(now - self.start)
            self.start = now

    logger.set_logger_dir(os.path.join(workdir, "log"), action="keep")
    in_place_available = checkpoint_snapshot.fast_crc32c
    if not in_place:
        checkpoint_snapshot.fast_crc32c = lambda: False
    try:
        config = tfloop.TrainConfig(
            model=model_shapes._model_desc(shape), data=tfloop.DatasetInput(shape.data),
            callbacks=[saver, Periods()], steps_per_epoch=plan.steps * plan.total_periods,
            max_epoch=1)
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        checkpoint_snapshot.fast_crc32c = in_place_available
        logger.unset_logger_dir()
    return times


# ---- eager ---------------------------------------------------------------------------------------
def run_checkpoint(plan, workdir, asynchronous):
    variables = [tf.Variable(tf.zeros([model_shapes.CHUNK_ELEMENTS]), name=f"v{k}")
                 for k in range(model_shapes.VARIABLE_CHUNKS)]

    @tf.function
    def step():
        s = tf.random.uniform([], -0.5, 0.5)
        with tf.GradientTape() as tape:
            cost = tf.add_n([tf.reduce_sum(v * s) for v in variables])
        for v, g in zip(variables, tape.gradient(cost, variables)):
            v.assign_sub(LR * g)

    checkpoint = tf.train.Checkpoint(**{f"v{k}": v for k, v in enumerate(variables)})
    options = tf.train.CheckpointOptions(experimental_enable_async_checkpoint=asynchronous)
    try:
        return drive(plan, step,
                     lambda p: checkpoint.write(os.path.join(workdir, f"ckpt-{p % 2}"),
                                                options=options),
                     checkpoint.sync if asynchronous else (lambda: None))
    finally:
        if asynchronous:
            checkpoint.sync()
        variables.clear()


def run(method, plan):
    workdir = tempfile.mkdtemp(prefix="tfloop-bench-save-")
    try:
        if method in ("tfloop", "tfloop_tf_writer", "tfloop_sync", "tfloop_new_files"):
            return run_tfloop(plan, workdir, background=method != "tfloop_sync",
                              in_place=method in ("tfloop", "tfloop_new_files"),
                              max_to_keep=10 if method == "tfloop_new_files" else 2)
        if method == "saver":
            return run_saver(plan, workdir)
        if method in ("ckpt_write", "ckpt_async"):
            return run_checkpoint(plan, workdir, asynchronous=method == "ckpt_async")
        raise ValueError(f"Unknown method {method!r}; known: {', '.join(METHODS)}.")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        gc.collect()


def memcpy_seconds(repeats=5):
    """The median time of copying 1 GB into memory already mapped."""
    source = np.ones(model_shapes.VARIABLE_CHUNKS * model_shapes.CHUNK_ELEMENTS, np.float32)
    target = np.empty_like(source)
    np.copyto(target, source)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_seconds(workdir):
    """Where a write of 1 GB goes, each part timed alone in this process: the CRC-32C of the bytes
    (what the in-place writer computes), the in-place writer's data written into a new file and
    into the same file again, and TensorFlow's ``SaveV2`` of the same arrays (a new file each
    time, as its Saver writes)."""
    import google_crc32c

    from tfloop.callbacks import checkpoint_bundle
    arrays = [np.full(model_shapes.CHUNK_ELEMENTS, k, np.float32)
              for k in range(model_shapes.VARIABLE_CHUNKS)]
    path = os.path.join(workdir, "data")
    out = {}

    def timed(name, fn):
        start = time.perf_counter()
        fn()
        out[name] = time.perf_counter() - start

    def write_data():
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            checkpoint_bundle.write_data(fd, arrays)
        finally:
            os.close(fd)
    timed("crc32c", lambda: [google_crc32c.value(a.view(np.uint8)) for a in arrays])
    timed("write_new_file", write_data)
    timed("write_in_place", write_data)
    os.remove(path)
    names = [f"v{k}" for k in range(len(arrays))]
    tensors = [tf.constant(a) for a in arrays]
    timed("tf_savev2", lambda: tf.raw_ops.SaveV2(
        prefix=os.path.join(workdir, "tf"), tensor_names=names, shape_and_slices=[""] * len(names),
        tensors=tensors))
    return out


def parts_seconds():
    workdir = tempfile.mkdtemp(prefix="tfloop-bench-save-")
    try:
        return write_seconds(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        gc.collect()


# ---- report --------------------------------------------------------------------------------------
def costs(times):
    """``(median cost, mean cost)`` of a save: with saves minus without, in seconds."""
    return (statistics.median(times["on"]) - statistics.median(times["off"]),
            statistics.mean(times["on"]) - statistics.mean(times["off"]))


def summarize(runs, methods):
    rows = []
    for m in methods:
        mine = [r for r in runs if r["method"] == m]
        medians = [costs(r["times"])[0] for r in mine]
        means = [costs(r["times"])[1] for r in mine]
        ratios = []
        for r in mine:
            peers = [costs(x["times"])[0] for x in runs if x["round"] == r["round"]
                     and x["method"] in ("saver", "ckpt_write", "ckpt_async")]
            if peers and m not in ("saver", "ckpt_write", "ckpt_async"):
                ratios.append(costs(r["times"])[0] / min(peers))
        rows.append({"method": m, "rounds": len(mine),
                     "cost_s_median": statistics.median(medians),
                     "cost_s_range": (min(medians), max(medians)),
                     "cost_s_mean_block": statistics.median(means),
                     "period_s_off": statistics.median(
                         statistics.median(r["times"]["off"]) for r in mine),
                     "ratio_to_cheapest_peer": statistics.median(ratios) if ratios else None})
    return rows


def parts_markdown(parts):
    lines = [[name, f"{statistics.median(p[name] for p in parts):.3f}",
              f"{min(p[name] for p in parts):.2f}-{max(p[name] for p in parts):.2f}"]
             for name in ("memcpy", "crc32c", "write_new_file", "write_in_place", "tf_savev2")]
    return ["Where a write of 1 GB goes (each part alone, median over rounds):", "",
            report.table(["part", "s (median)", "min-max"], lines), ""]


def markdown(rows, info, parts):
    lines = [[r["method"], f"{r['cost_s_median']:.3f}",
              f"{r['cost_s_range'][0]:.2f}-{r['cost_s_range'][1]:.2f}",
              f"{r['cost_s_mean_block']:.3f}", f"{r['period_s_off']:.3f}",
              f"{r['ratio_to_cheapest_peer']:.2f}" if r["ratio_to_cheapest_peer"] else "-"]
             for r in rows]
    return "\n".join([
        f"# What a 1 GB save costs training ({info['date']})", "",
        report.machine_line(info),
        f"{info['rounds']} rounds; periods of {info['steps']} steps, {info['blocks']} blocks of "
        f"{info['periods']} periods alternating without / with a save after each period. A 1 GB "
        f"memcpy: {info['memcpy_s']:.3f} s (median over rounds).", "",
        report.table(["method", "cost per save, s (median period with - without)", "min-max",
                      "same, block means", "period without saves, s",
                      "cost / the round's cheapest TF saver"], lines), "",
    ] + parts_markdown(parts) + [f"- `{m}`: {METHODS[m]}" for m in info["methods"]]) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS), help=", ".join(METHODS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=4, help="steps per period")
    parser.add_argument("--periods", type=int, default=4, help="periods per block")
    parser.add_argument("--blocks", type=int, default=4, help="blocks, alternating off/on")
    parser.add_argument("--name", default="save_cost")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    methods = args.methods.split(",")
    plan = Plan(args.steps, args.periods, args.blocks)
    info = report.machine_info()
    info.update(methods=methods, rounds=args.rounds, steps=args.steps, periods=args.periods,
                blocks=args.blocks)
    runs, parts = [], []
    for r in range(args.rounds):
        parts.append(dict(parts_seconds(), memcpy=memcpy_seconds()))
        for method in methods[r % len(methods):] + methods[:r % len(methods)]:
            times = run(method, plan)
            runs.append({"method": method, "round": r, "times": times,
                         "loadavg": os.getloadavg()})
            median, mean = costs(times)
            log(f"round {r + 1}/{args.rounds} {method}: {median:.3f} s per save (block means "
                f"{mean:.3f}), period {statistics.median(times['off']):.3f} s without (load "
                f"{os.getloadavg()[0]:.1f})")
    info["memcpy_s"] = statistics.median(p["memcpy"] for p in parts)
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(runs, methods)
    report.write_json(os.path.join(args.out, args.name + ".json"),
                      {"info": info, "summary": rows, "runs": runs, "parts": parts})
    text = markdown(rows, info, parts)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
