"""Seconds from process start to the end of the first training step, and peak RSS by then.

Usage::

    python bench/startup.py                 # raw loop, tfloop (bare and default), Keras; 3 repeats
    python bench/startup.py --quick         # one repeat
    python bench/startup.py --model convnet --methods tfloop_default,keras_fit

Each measurement is a fresh Python process; the clock starts in the parent right before the
process is started, so interpreter start and imports count. The child also reports when its
imports finished and when the session was ready. Results go to ``bench/results/startup.json``
and ``startup.md``.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

METHODS = {
    "raw_dataset": "raw tf.compat.v1 Session, tf.data in the graph",
    "tfloop_bare": "tfloop SimpleTrainer, no callbacks or monitors",
    "tfloop_default": "tfloop SimpleTrainer, default callbacks + monitors, log dir set",
    "keras_fit": "Keras 3 model.fit (first step includes tracing the train function)",
}


def _mark(marks, name, t0):
    marks[name] = time.time() - t0


def child(method, model, t0):
    marks = {}
    import common
    import tensorflow as tf
    _mark(marks, "imports_s", t0)
    spec = common.MODELS[model]
    if method == "raw_dataset":
        sess, train_op, _ = common.raw_graph(spec, feed=False)
        _mark(marks, "session_ready_s", t0)
        sess.run(train_op)
        _mark(marks, "first_step_s", t0)
    elif method == "keras_fit":
        import keras
        x, y = spec.data()
        ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(common.BATCH, drop_remainder=True)
        model_ = spec.keras_model()
        model_.compile(optimizer=keras.optimizers.SGD(common.LEARNING_RATE),
                       loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))

        class First(keras.callbacks.Callback):
            def on_train_begin(self, logs=None):
                _mark(marks, "session_ready_s", t0)

            def on_train_batch_end(self, batch, logs=None):
                if "first_step_s" not in marks:
                    _mark(marks, "first_step_s", t0)
        model_.fit(ds, epochs=1, steps_per_epoch=1, verbose=0, callbacks=[First()])
    else:
        import tempfile

        import tfloop
        from tfloop.utils import logger
        _mark(marks, "imports_s", t0)
        logger.set_logger_dir(tempfile.mkdtemp(prefix="tfloop-startup-"), action="keep")

        class First(tfloop.Callback):
            def _before_train(self):
                _mark(marks, "session_ready_s", t0)

            def _trigger_step(self):
                if "first_step_s" not in marks:
                    _mark(marks, "first_step_s", t0)
        kwargs = dict(extra_callbacks=[], monitors=[]) if method == "tfloop_bare" else {}
        config = tfloop.TrainConfig(
            model=common.tfloop_model(spec),
            data=tfloop.DatasetInput(common.dataset_fn(spec, repeat=False)),
            callbacks=[First()], steps_per_epoch=1, max_epoch=1, **kwargs)
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    marks["peak_rss_mb"] = common.peak_rss_mb()
    marks.update(method=method, model=model)
    print(json.dumps(marks), flush=True)


def spawn(method, model, timeout):
    env = dict(os.environ)
    t0 = time.time()
    env["BENCH_T0"] = repr(t0)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", method,
                           "--model", model],
                          capture_output=True, env=env, timeout=timeout, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{method} failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads([line for line in proc.stdout.splitlines() if line.startswith("{")][-1])


def summarize(runs, methods):
    rows = []
    for method in methods:
        mine = [r for r in runs if r["method"] == method]
        row = {"method": method, "repeats": len(mine)}
        for key in ("imports_s", "session_ready_s", "first_step_s"):
            row[key] = statistics.median(r[key] for r in mine)
        row["first_step_min_s"] = min(r["first_step_s"] for r in mine)
        row["first_step_max_s"] = max(r["first_step_s"] for r in mine)
        row["peak_rss_mb"] = statistics.median(r["peak_rss_mb"] for r in mine)
        rows.append(row)
    return rows


def markdown(rows, info):
    headers = ["method", "to first step, s (median)", "min-max", "imports done, s",
               "session ready, s", "peak RSS, MB"]
    lines = [[r["method"], "{:.2f}".format(r["first_step_s"]),
              "{:.2f}-{:.2f}".format(r["first_step_min_s"], r["first_step_max_s"]),
              "{:.2f}".format(r["imports_s"]), "{:.2f}".format(r["session_ready_s"]),
              "{:.0f}".format(r["peak_rss_mb"])] for r in rows]
    return "\n".join([
        "# Startup ({}, model {})".format(info["date"], info["model"]), "",
        report.machine_line(info),
        "Repeats: {}. Seconds from just before the process is started to each point.".format(
            info["repeats"]), "",
        report.table(headers, lines), ""] +
        [f"- `{m}`: {METHODS[m]}" for m in info["methods"]]) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--model", default="mlp", help="mlp, convnet or tiny")
    parser.add_argument("--repeats", type=int, default=None, help="3 by default, 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="one repeat")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per process")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    if args.child:
        return child(args.child, args.model, float(os.environ["BENCH_T0"]))
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            parser.error("unknown method {!r}; known: {}".format(m, ", ".join(METHODS)))
    repeats = args.repeats or (1 if args.quick else 3)
    info = report.machine_info()
    info.update(methods=methods, model=args.model, repeats=repeats)
    runs = []
    for r in range(repeats):
        for method in methods[r % len(methods):] + methods[:r % len(methods)]:
            result = spawn(method, args.model, args.timeout)
            result["repeat"] = r
            runs.append(result)
            print("repeat {}/{}: {}: first step after {:.2f} s, peak RSS {:.0f} MB".format(
                r + 1, repeats, method, result["first_step_s"], result["peak_rss_mb"]),
                file=sys.stderr, flush=True)
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(runs, methods)
    os.makedirs(args.out, exist_ok=True)
    report.write_json(os.path.join(args.out, "startup.json"),
                      {"info": info, "summary": rows, "runs": runs})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, "startup.md"), text)
    print(text)


if __name__ == "__main__":
    main()
