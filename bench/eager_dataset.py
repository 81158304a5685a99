"""Per-step time of an eagerly built tf.data dataset against the function form of the same pipeline.

Usage::

    python bench/eager_dataset.py                 # mlp + tiny, 3 rounds of 30 bursts (~3 min)
    python bench/eager_dataset.py --quick         # 1 round of 10 bursts
    python bench/eager_dataset.py --models tiny --rounds 5

Every method trains the same model with ``SimpleTrainer`` and no callbacks or monitors (so that
the input is the only difference), each with its own graph and session. The methods of a model
train at the same time in threads of one process but take turns: one epoch (a burst of steps)
each, passing a baton at the epoch's end, so only one trains at any moment and consecutive bursts
of two methods are seconds apart. That takes most of a shared machine's load swings out of their
ratios. Each method is compared with the one it differs from by one thing: the ratio reported is
the median over bursts of the burst's time divided by that of the other method's burst of the
same turn; the first epoch of each is a warm-up and not timed.

Methods (compared with):

* ``function``: ``data=make_dataset``, a function tfloop calls inside its graph.
* ``eager``: ``data=ds``, the same pipeline built eagerly, rebuilt in tfloop's graph (function).
* ``eager_cast``: ``eager`` with float64 features, cast to float32 in the graph (eager).
* ``eager_mapped``: ``eager`` plus a ``map`` that reshapes each batch to its static shape (eager).
* ``eager_checked``: the same ``map`` leaving the feature dimension open, so that the input is
  checked by one ``EnsureShape`` each step (eager_mapped).
* ``eager_narrowed``: ``eager`` with int64 labels for the int32 input, cast in the graph after
  the check that every label is in int32's range (a minimum and a maximum of the batch, one
  assertion) (eager).

Results go to ``bench/results/eager_dataset.json`` and ``.md``.
"""
import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

import common
import report
from common import BATCH, MODELS, log, tfloop_model

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
METHODS = {
    "function": "`data=make_dataset`: tfloop calls the function inside its graph",
    "eager": "`data=ds`: the same pipeline built eagerly, rebuilt in tfloop's graph",
    "eager_cast": "`eager` with float64 features: one Cast per step in the graph",
    "eager_mapped": "`eager` plus a `map` reshaping each batch to its static shape",
    "eager_checked": "`eager_mapped` leaving the feature dimension open: one EnsureShape per step",
    "eager_narrowed": "`eager` with int64 labels: a range check and a Cast per step in the graph",
}
COMPARED_WITH = {"function": "function", "eager": "function", "eager_cast": "eager",
                 "eager_mapped": "eager", "eager_checked": "eager_mapped",
                 "eager_narrowed": "eager"}


def make_data(spec, method):
    """The ``data=`` of ``method``: the same batches in the same order for every method."""
    tf = common.tf
    x, y = spec.data()

    def pipeline(features, labels=y):
        ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(BATCH,
                                                                          drop_remainder=True)
        if method in ("eager_mapped", "eager_checked"):
            width = -1 if method == "eager_checked" else features[0].size
            ds = ds.map(lambda f, label: (tf.reshape(f, [BATCH, width]), label))
        return ds

    if method == "function":
        return lambda: pipeline(x)
    if method == "eager_cast":
        return pipeline(x.astype("float64"))
    if method == "eager_narrowed":
        return pipeline(x, y.astype("int64"))
    return pipeline(x)


class _Turns:
    """A baton passed between the trainers of one round, in a fixed cycle."""

    def __init__(self, methods):
        self.methods = list(methods)
        self.turn = 0
        self.done = set()
        self.condition = threading.Condition()

    def wait(self, method):
        with self.condition:
            self.condition.wait_for(lambda: self.methods[self.turn] == method)

    def pass_on(self, method, finished=False):
        with self.condition:
            if finished:
                self.done.add(method)
            if len(self.done) < len(self.methods):
                self.turn = (self.turn + 1) % len(self.methods)
                while self.methods[self.turn] in self.done:
                    self.turn = (self.turn + 1) % len(self.methods)
            self.condition.notify_all()


def _turn_taker(turns, method, bursts, ready):
    import tfloop

    class TakeTurns(tfloop.Callback):
        """Trains one epoch per turn; records the time of every epoch after the first."""

        def _before_train(self):
            ready.set()

        def _before_epoch(self):
            turns.wait(method)
            self.start, self.cpu_start = time.perf_counter(), time.process_time()

        def _after_epoch(self):
            if self.epoch_num > self.trainer.loop.starting_epoch:
                bursts.append((time.perf_counter() - self.start,
                               time.process_time() - self.cpu_start))
            if self.epoch_num < self.trainer.loop.max_epoch:
                turns.pass_on(method)

        def _after_train(self):
            turns.pass_on(method, finished=True)
    return TakeTurns()


def run_round(spec, methods, bursts, steps):
    """Train every method for ``bursts + 1`` epochs of ``steps`` steps, taking turns; the wall
    and process CPU seconds of each timed epoch, per method (only one method trains at a time, so
    the process's CPU time in a burst is that method's)."""
    import tfloop
    from tfloop.utils import logger
    logger.set_logger_dir(os.path.join(tempfile.mkdtemp(prefix="tfloop-bench-"), "log"),
                          action="keep")
    turns = _Turns(methods)
    times = {method: [] for method in methods}
    ready = {method: threading.Event() for method in methods}
    errors = []

    def train(method):
        try:
            config = tfloop.TrainConfig(
                model=tfloop_model(spec), data=make_data(spec, method),
                callbacks=[_turn_taker(turns, method, times[method], ready[method])],
                extra_callbacks=[], monitors=[], steps_per_epoch=steps, max_epoch=bursts + 1)
            tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
        except Exception as e:  # noqa: BLE001 - reported after the round; the baton must move on
            errors.append((method, e))
            ready[method].set()
            turns.pass_on(method, finished=True)

    threads = [threading.Thread(target=train, args=(method,)) for method in methods]
    for method, thread in zip(methods, threads):
        # One graph at a time: building a model uses process-wide state (the tower context).
        thread.start()
        ready[method].wait()
    for thread in threads:
        thread.join()
    logger.unset_logger_dir()
    if errors:
        raise RuntimeError(f"{errors[0][0]} failed: {errors[0][1]!r}")
    return {method: {"steps_per_burst": steps, "burst_s": [w for w, _ in times[method]],
                     "burst_cpu_s": [c for _, c in times[method]]} for method in methods}


def summarize(rounds, models, methods):
    """One row per (model, method): median step time over every burst, its range, and the median
    ratio of paired bursts to the method it is compared with."""
    rows = []
    for model in models:
        for method in methods:
            reference = COMPARED_WITH[method]
            per_step, their_per_step, cpu_per_step, ratios, cpu_ratios = [], [], [], [], []
            for r in rounds:
                mine, theirs = r[model][method], r[model][reference]
                per_step += [t / mine["steps_per_burst"] * 1e3 for t in mine["burst_s"]]
                their_per_step += [t / theirs["steps_per_burst"] * 1e3 for t in theirs["burst_s"]]
                cpu_per_step += [t / mine["steps_per_burst"] * 1e3 for t in mine["burst_cpu_s"]]
                ratios += [a / b for a, b in zip(mine["burst_s"], theirs["burst_s"])]
                cpu_ratios += [a / b for a, b in zip(mine["burst_cpu_s"], theirs["burst_cpu_s"])]
            rows.append({"model": model, "method": method, "compared_with": reference,
                         "ms_per_step": statistics.median(per_step),
                         "ms_min": min(per_step), "ms_max": max(per_step),
                         "ratio": statistics.median(ratios), "ratio_q1": _quantile(ratios, 0.25),
                         "ratio_q3": _quantile(ratios, 0.75), "bursts": len(ratios),
                         "cpu_ms_per_step": statistics.median(cpu_per_step),
                         "cpu_ratio": statistics.median(cpu_ratios),
                         "best_ratio": min(per_step) / min(their_per_step)})
    return rows


def _quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def _ratio_cells(row):
    if row["method"] == row["compared_with"]:
        return ["-", "-", "-", "-", "-"]
    return [row["compared_with"], f"{row['ratio']:.3f}",
            f"{row['ratio_q1']:.3f}-{row['ratio_q3']:.3f}", f"{row['cpu_ratio']:.3f}",
            f"{row['best_ratio']:.3f}"]


def markdown(rows, info, args):
    lines = [("Eager dataset against the function form: `SimpleTrainer`, no callbacks or monitors, "
             f"{args.rounds} round(s) of {args.bursts} bursts per method, the methods taking "
             "turns burst by burst; ratio = median over bursts of the burst's time divided by "
             "that of the compared method's burst of the same turn (q1-q3: its quartiles); CPU "
             "ratio: the same with the process's CPU time; best ratio: fastest burst over "
             "fastest burst."), "",
             report.machine_line(info), "",
             report.table(["model", "method", "ms/step (median)", "min-max", "CPU ms/step",
                           "compared with", "time ratio", "q1-q3", "CPU ratio", "best ratio"],
                          [[r["model"], r["method"], f"{r['ms_per_step']:.3f}",
                            f"{r['ms_min']:.3f}-{r['ms_max']:.3f}",
                            f"{r['cpu_ms_per_step']:.3f}"] + _ratio_cells(r)
                           for r in rows]), "",
             "Methods:", ""]
    lines += [f"- `{name}`: {what}" for name, what in METHODS.items() if name in args.methods]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,tiny")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bursts", type=int, default=30)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="eager_dataset")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.bursts = 1, 10
    models = args.models.split(",")
    args.methods = args.methods.split(",")
    for name in args.methods:
        if name not in METHODS:
            sys.exit(f"Unknown method {name!r}; known: {', '.join(METHODS)}.")
    for name in list(args.methods):
        while COMPARED_WITH[name] not in args.methods:
            name = COMPARED_WITH[name]
            args.methods.insert(0, name)
    info = report.machine_info()
    rounds = []
    for index in range(args.rounds):
        # The order of turns rotates with the round.
        shift = index % len(args.methods)
        order = args.methods[shift:] + args.methods[:shift]
        results = {}
        for model in models:
            spec = MODELS[model]
            steps = spec.schedule(args.quick)[0] // 2
            results[model] = run_round(spec, order, args.bursts, steps)
            log(f"round {index + 1}/{args.rounds} {model}: " + ", ".join(
                f"{m} {statistics.median(r['burst_s']) / steps * 1e3:.3f} ms/step "
                f"(CPU {statistics.median(r['burst_cpu_s']) / steps * 1e3:.3f})"
                for m, r in results[model].items()))
        rounds.append(results)
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(rounds, models, args.methods)
    report.write_json(os.path.join(RESULTS, args.name + ".json"),
                      {"machine": info, "rounds": rounds, "summary": rows, "quick": args.quick})
    text = markdown(rows, info, args)
    report.write_text(os.path.join(RESULTS, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
