"""Per-epoch cost as a run grows: the wall time of an epoch at epoch 10, 1,000 and 10,000.

Usage::

    python bench/epoch_cost.py                       # epochs 10, 1000, 10000; 3 rounds
    python bench/epoch_cost.py --quick               # epochs 10, 1000; 1 round
    python bench/epoch_cost.py --steps-per-epoch 1   # one-step epochs: nearly all epoch work
    python bench/epoch_cost.py --methods raw,tfloop_default,tfloop_rewrite --at 10,1000

Methods (each builds its own graph; all run in one process, interleaved round by round):

* ``raw``: a ``tf.compat.v1.Session`` loop, ``sess.run(train_op)``, nothing between epochs.
* ``tfloop_default``: ``SimpleTrainer`` with the default callbacks and monitors and a log
  directory (``stats.json``, event files, ``log.log``, the progress bar and the printed scalars;
  console output goes to ``/dev/null``).
* ``tfloop_rewrite``: the same, with ``stats.json`` rewritten whole after every record (the way
  tfloop did it before records were appended, and tensorpack does): for comparison, slow at
  10,000 epochs.
* ``keras_fit``: Keras 3 ``model.fit`` with ``CSVLogger`` and ``TensorBoard`` callbacks,
  ``verbose=0``.

The model is ``tiny`` (32-16-10, batch 64) on a repeated tf.data pipeline, so a step costs little
and the epoch's own work shows; tfloop's model adds no summaries of its own (the defaults record
the cost's moving average). An epoch's cost is the time from its start to the next epoch's
start (its steps and all its end-of-epoch work); the cost "at epoch N" is the median over epochs
N .. N+19. Per round, the script computes each method's cost at each N, its ratio at the last N to
the first, the fixed cost per epoch over the raw loop (method - raw, same steps) and the whole
run's time; the tables give the medians over rounds. Results go to
``bench/results/epoch_cost.json`` and ``.md``.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
WINDOW = 20
METHODS = ("raw", "tfloop_default", "keras_fit")


def now():
    """Wall and process CPU seconds (CPU time, summed over threads, is less sensitive to load)."""
    return time.perf_counter(), time.process_time()


def run_raw(spec, steps_per_epoch, epochs):
    import common
    sess, train_op, _ = common.raw_graph(spec, feed=False)
    starts = []
    for _ in range(epochs):
        starts.append(now())
        for _ in range(steps_per_epoch):
            sess.run(train_op)
    starts.append(now())
    sess.close()
    return starts


def plain_model(spec):
    """The model with nothing added by the user (tfloop still records the cost's moving
    average): the epoch's work is the framework's, not the summaries a user would add."""
    import common
    import tensorflow as tf

    import tfloop

    class PlainModel(tfloop.ModelDesc):
        def inputs(self):
            return [tf.TensorSpec([None] + list(spec.input_shape), tf.float32, "input"),
                    tf.TensorSpec([None], tf.int32, "label")]

        def build_graph(self, x, y):
            return spec.build_cost(x, y)

        def optimizer(self):
            return common.learning_rate_optimizer()
    return PlainModel()


def run_tfloop(spec, steps_per_epoch, epochs, rewrite=False):
    import common

    import tfloop
    from tfloop.utils import logger
    starts = []

    class EpochStarts(tfloop.Callback):
        def _before_epoch(self):
            starts.append(now())

        def _after_train(self):
            starts.append(now())

    class RewritingJSONWriter(tfloop.JSONWriter):
        def _setup_graph(self):
            super()._setup_graph()
            self._file = None      # every record rewrites the whole file, atomically

    logger.set_logger_dir(tempfile.mkdtemp(prefix="tfloop-epoch-cost-"), action="keep")
    console = logger.console_stream()
    with open(os.devnull, "w") as devnull:
        logger.set_console_stream(devnull)
        try:
            monitors = [tfloop.TFEventWriter(),
                        RewritingJSONWriter() if rewrite else tfloop.JSONWriter(),
                        tfloop.ScalarPrinter()]
            config = tfloop.TrainConfig(
                model=plain_model(spec),
                data=tfloop.DatasetInput(common.dataset_fn(spec, repeat=True)),
                callbacks=[EpochStarts()], monitors=monitors,
                steps_per_epoch=steps_per_epoch, max_epoch=epochs)
            tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
        finally:
            logger.set_console_stream(console)
            logger.unset_logger_dir()
    return starts


def run_keras(spec, steps_per_epoch, epochs):
    import common
    import keras
    import tensorflow as tf
    starts = []

    class EpochStarts(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            starts.append(now())

        def on_train_end(self, logs=None):
            starts.append(now())

    logdir = tempfile.mkdtemp(prefix="keras-epoch-cost-")
    x, y = spec.data()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(common.BATCH, drop_remainder=True)
    model = spec.keras_model()
    model.compile(optimizer=keras.optimizers.SGD(common.LEARNING_RATE),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds.repeat(), epochs=epochs, steps_per_epoch=steps_per_epoch, verbose=0,
              callbacks=[EpochStarts(), keras.callbacks.CSVLogger(os.path.join(logdir, "log.csv")),
                         keras.callbacks.TensorBoard(os.path.join(logdir, "tb"))])
    return starts


RUNNERS = {
    "raw": run_raw,
    "tfloop_default": run_tfloop,
    "tfloop_rewrite": lambda spec, steps, epochs: run_tfloop(spec, steps, epochs, rewrite=True),
    "keras_fit": run_keras,
}


def costs_at(starts, points, clock):
    """``{N: median seconds of epochs N .. N+WINDOW-1}`` (epochs numbered from 1) by ``clock``
    (0: wall, 1: CPU)."""
    durations = [b[clock] - a[clock] for a, b in zip(starts, starts[1:])]
    return {n: statistics.median(durations[n - 1:n - 1 + WINDOW]) for n in points}


def one_round(methods, spec, steps_per_epoch, points):
    epochs = max(points) + WINDOW
    starts = {}
    for method in methods:
        common_log(f"  {method}: {epochs} epochs of {steps_per_epoch} steps")
        starts[method] = RUNNERS[method](spec, steps_per_epoch, epochs)
    derived = {}
    for clock, name in enumerate(("wall", "cpu")):
        found = {m: costs_at(s, points, clock) for m, s in starts.items()}
        for method, costs in found.items():
            derived.setdefault(method, {})[name] = {
                "ms": {n: costs[n] * 1e3 for n in points},
                "growth": costs[points[-1]] / costs[points[0]],
                "over_raw_ms": (None if method == "raw" else
                                {n: (costs[n] - found["raw"][n]) * 1e3 for n in points}),
                "total_s": starts[method][-1][clock] - starts[method][0][clock],
            }
    return derived


def common_log(*args):
    print(*args, file=sys.stderr, flush=True)


def summarize(rounds, methods, points):
    summary = {}
    for method in methods:
        for clock in ("wall", "cpu"):
            per_round = [r[method][clock] for r in rounds]
            summary.setdefault(method, {})[clock] = {
                "ms": {n: statistics.median(r["ms"][n] for r in per_round) for n in points},
                "growth": statistics.median(r["growth"] for r in per_round),
                "over_raw_ms": None if method == "raw" else
                {n: statistics.median(r["over_raw_ms"][n] for r in per_round) for n in points},
                "total_s": statistics.median(r["total_s"] for r in per_round),
            }
    return summary


def markdown(summary, info, methods, points):
    sections = []
    for clock, title in (("wall", "Wall time"), ("cpu", "Process CPU time (all threads)")):
        rows = []
        for method in methods:
            s = summary[method][clock]
            over = s["over_raw_ms"]
            rows.append([method] + [f"{s['ms'][n]:.2f}" for n in points] +
                        [f"{s['growth']:.2f}x"] +
                        [("-" if over is None else f"{over[n]:+.2f}") for n in points])
        headers = (["method"] + [f"ms/epoch at {n:,}" for n in points] +
                   [f"{points[-1]:,} vs {points[0]:,}"] +
                   [f"over raw at {n:,}, ms" for n in points])
        totals = ", ".join(f"{m} {summary[m][clock]['total_s']:.1f} s" for m in methods)
        sections += [f"{title}:", "", report.table(headers, rows), "",
                     f"Whole run ({max(points) + WINDOW} epochs): {totals}.", ""]
    return "\n".join([
        f"# Per-epoch cost by epoch ({info['date']})", "",
        report.machine_line(info), "",
        f"Model `tiny`, {info['steps_per_epoch']} steps per epoch, {info['rounds']} round(s) "
        "(medians of per-round values); an epoch's cost is the median over the 20 epochs from "
        "that epoch on.", ""] + sections) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="epochs 10 and 1000, one round")
    parser.add_argument("--at", default=None,
                        help="the epochs to measure at, comma-separated (default 10,1000,10000)")
    parser.add_argument("--rounds", type=int, default=None, help="3 by default, 1 with --quick")
    parser.add_argument("--steps-per-epoch", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"comma-separated, of {', '.join(RUNNERS)} (raw is always run)")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    parser.add_argument("--name", default="epoch_cost", help="results file name, no extension")
    args = parser.parse_args()
    points = sorted(int(n) for n in (args.at or ("10,1000" if args.quick else
                                                "10,1000,10000")).split(","))
    methods = ["raw"] + [m for m in args.methods.split(",") if m and m != "raw"]
    unknown = [m for m in methods if m not in RUNNERS]
    if unknown or points[0] < 1:
        parser.error(f"unknown methods {unknown}" if unknown else "--at: epochs start at 1")
    rounds = args.rounds or (1 if args.quick else 3)
    sys.path.insert(0, HERE)
    import common
    spec = common.MODELS["tiny"]
    info = report.machine_info()
    info.update(steps_per_epoch=args.steps_per_epoch, rounds=rounds, points=points)
    results = []
    for r in range(rounds):
        common_log(f"round {r + 1}/{rounds}, load {os.getloadavg()}")
        results.append(one_round(methods, spec, args.steps_per_epoch, points))
    info["loadavg_end"] = os.getloadavg()
    summary = summarize(results, methods, points)
    os.makedirs(args.out, exist_ok=True)
    report.write_json(os.path.join(args.out, args.name + ".json"),
                      {"info": info, "rounds": results, "summary": summary})
    text = markdown(summary, info, methods, points)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
