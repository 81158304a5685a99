"""Time to the first step and bytes written, by the size of the arrays the data is sliced from.

Usage::

    python bench/startup_data.py                     # 1, 100 and 400 MB; 5 rounds (~6 min)
    python bench/startup_data.py --quick             # 1, 10 and 40 MB; 1 round
    python bench/startup_data.py --sizes 1,400 --methods tfloop_eager,keras_fit
    python bench/startup_data.py --methods tfloop_in_graph --sizes 1,100   # before the fix

The arrays (float32 features of the ``mlp`` model, 784 per example, and int32 labels) are made
before the clock starts, and so is the eager dataset of the methods that take one (as the README
builds ``ds`` before training). Every method reads the README's pipeline,
``from_tensor_slices((x, y)).shuffle(1000).batch(64)``. The clock runs from the call that starts
training (``TrainConfig`` + ``launch_train_with_config``; ``model.fit``) to the end of the first
step; the run trains two steps and saves once. Bytes written: everything in the run's log
directory afterwards.

Methods:

* ``tfloop_eager``: the pipeline built eagerly beforehand, ``data=ds`` (the README's form), with
  ``ModelSaver`` and the default monitors (TensorBoard events with the graph).
* ``tfloop_function``: the function that builds it, ``data=lambda: ...``.
* ``tfloop_in_graph``: ``tfloop_function`` with ``DatasetInput(..., feed_arrays_from=None)``:
  the arrays stored in the graph, as before tfloop fed them (slow: 40 s at 400 MB).
* ``keras_fit``: Keras 3 ``model.fit`` on the eager pipeline, with the ``TensorBoard`` and
  ``ModelCheckpoint`` callbacks.

Methods and sizes take turns in one process (every round runs each method once per size, the
order of sizes and of methods rotating by round, after one warm-up run of each method that is
not counted).
Two ratios, each the median over rounds of a ratio within one round: to the same method's time
at the first size, and to ``keras_fit``'s time at the same size. Results go to
``bench/results/startup_data.json`` and ``.md``, with the load average at the start and the end
(the runs' own loads are in the JSON).
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import common
import report
from common import BATCH, MODELS, log, tfloop_model

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
METHODS = {
    "tfloop_eager": "`data=ds`, the pipeline built eagerly beforehand (the README's form), "
                    "ModelSaver, default monitors",
    "tfloop_function": "`data=lambda: from_tensor_slices((x, y)).shuffle(1000).batch(64)`",
    "tfloop_in_graph": "`tfloop_function` with the arrays stored in the graph "
                       "(`feed_arrays_from=None`, as before)",
    "keras_fit": "Keras 3 `model.fit` on the eager pipeline, TensorBoard + ModelCheckpoint",
}
SHUFFLE_BUFFER = 1000       # the README's
SPEC = MODELS["mlp"]


def make_arrays(megabytes):
    rows = max(BATCH * 2, int(megabytes * 1e6 / (4 * (SPEC.input_shape[0] + 1))))
    rng = common.np.random.RandomState(common.SEED)
    x = rng.rand(rows, *SPEC.input_shape).astype("float32")
    y = rng.randint(0, common.NUM_CLASSES, size=rows).astype("int32")
    return x, y


def _bytes_under(directory):
    return sum(os.path.getsize(os.path.join(root, name))
               for root, _, names in os.walk(directory) for name in names)


def pipeline(x, y):
    """The README's pipeline."""
    return common.tf.data.Dataset.from_tensor_slices((x, y)).shuffle(SHUFFLE_BUFFER).batch(BATCH)


def run_tfloop(method, x, y, logdir):
    import tfloop
    from tfloop.utils import logger
    first = {}

    class FirstStep(tfloop.Callback):
        def _trigger_step(self):
            first.setdefault("at", time.perf_counter())

    if method == "tfloop_eager":
        data = pipeline(x, y)
    else:
        def data():
            return pipeline(x, y)
        if method == "tfloop_in_graph":
            data = tfloop.DatasetInput(data, feed_arrays_from=None)
    logger.set_logger_dir(logdir, action="keep")
    try:
        start = time.perf_counter()
        config = tfloop.TrainConfig(model=tfloop_model(SPEC), data=data,
                                    callbacks=[tfloop.ModelSaver(), FirstStep()],
                                    steps_per_epoch=2, max_epoch=1)
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    return first["at"] - start


def run_keras(x, y, logdir):
    import keras
    first = {}

    class FirstStep(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            first.setdefault("at", time.perf_counter())

    ds = pipeline(x, y)
    model = SPEC.keras_model()
    model.compile(optimizer=keras.optimizers.SGD(common.LEARNING_RATE),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    callbacks = [keras.callbacks.TensorBoard(logdir),
                 keras.callbacks.ModelCheckpoint(os.path.join(logdir, "model.keras")),
                 FirstStep()]
    start = time.perf_counter()
    model.fit(ds, epochs=1, steps_per_epoch=2, verbose=0, callbacks=callbacks)
    return first["at"] - start


def measure(method, megabytes):
    x, y = make_arrays(megabytes)
    logdir = tempfile.mkdtemp(prefix="tfloop-startup-data-")
    try:
        if method == "keras_fit":
            seconds = run_keras(x, y, logdir)
        else:
            seconds = run_tfloop(method, x, y, logdir)
        return {"method": method, "megabytes": megabytes, "first_step_s": seconds,
                "bytes_written": _bytes_under(logdir)}
    finally:
        shutil.rmtree(logdir, ignore_errors=True)


def _median_ratio(runs, reference):
    """The median over rounds of each run's time divided by its round's ``reference`` run's."""
    return statistics.median(r["first_step_s"] / reference[r["round"]]["first_step_s"]
                             for r in runs)


def summarize(runs, methods, sizes):
    rows = []
    for method in methods:
        base = {r["round"]: r for r in runs if r["method"] == method and
                r["megabytes"] == sizes[0]}
        for megabytes in sizes:
            mine = [r for r in runs if r["method"] == method and r["megabytes"] == megabytes]
            keras = {r["round"]: r for r in runs if r["method"] == "keras_fit" and
                     r["megabytes"] == megabytes}
            rows.append({
                "method": method, "megabytes": megabytes,
                "first_step_s": statistics.median(r["first_step_s"] for r in mine),
                "first_step_ratio": _median_ratio(mine, base),
                "vs_keras": _median_ratio(mine, keras) if keras else None,
                "mb_written": statistics.median(r["bytes_written"] for r in mine) / 1e6,
                "written_ratio": statistics.median(
                    r["bytes_written"] / base[r["round"]]["bytes_written"] for r in mine),
                "loadavg": [min(r["loadavg"] for r in mine), max(r["loadavg"] for r in mine)]})
    return rows


def markdown(rows, info):
    first = f"{info['sizes'][0]:g} MB"
    headers = ["method", "data, MB", "to first step, s", f"vs {first}", "vs Keras `fit`",
               "written, MB", f"vs {first}"]
    lines = [[r["method"], f"{r['megabytes']:g}", f"{r['first_step_s']:.2f}",
              f"{r['first_step_ratio']:.2f}x",
              "" if r["vs_keras"] is None else f"{r['vs_keras']:.2f}x",
              f"{r['mb_written']:.2f}", f"{r['written_ratio']:.2f}x"] for r in rows]
    loads = [load for r in rows for load in r["loadavg"]]
    return "\n".join([
        f"# Start-up by data size ({info['date']})", "",
        report.machine_line(info),
        f"Rounds: {info['rounds']}; load average (1 min) during the runs: {min(loads):.1f}-"
        f"{max(loads):.1f}. Times: medians over rounds; ratios: medians of per-round ratios.", "",
        report.table(headers, lines), ""] +
        [f"- `{m}`: {METHODS[m]}" for m in info["methods"]]) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default="tfloop_eager,tfloop_function,keras_fit",
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--sizes", default=None,
                        help="megabytes, comma-separated, the first the reference "
                             "(default 1,100,400; 1,10,40 with --quick)")
    parser.add_argument("--rounds", type=int, default=None, help="5 by default, 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="small sizes, one round")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    sizes = [float(s) for s in (args.sizes or ("1,10,40" if args.quick else "1,100,400"))
             .split(",")]
    rounds = args.rounds or (1 if args.quick else 5)
    info = report.machine_info()
    info.update(methods=methods, sizes=sizes, rounds=rounds)
    log(f"load average at the start: {os.getloadavg()}")
    for method in methods:   # the first training of a process pays one-time costs: not counted
        measure(method, sizes[0])
    runs = []
    for r in range(rounds):
        for megabytes in sizes[r % len(sizes):] + sizes[:r % len(sizes)]:
            for method in methods[r % len(methods):] + methods[:r % len(methods)]:
                result = measure(method, megabytes)
                result["round"] = r
                result["loadavg"] = os.getloadavg()[0]
                runs.append(result)
                log(f"round {r + 1}/{rounds}: {method} {megabytes:g} MB: first step after "
                    f"{result['first_step_s']:.2f} s, {result['bytes_written'] / 1e6:.2f} MB "
                    f"written (load {os.getloadavg()[0]:.1f})")
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(runs, methods, sizes)
    os.makedirs(args.out, exist_ok=True)
    suffix = "_quick" if args.quick else ""
    report.write_json(os.path.join(args.out, f"startup_data{suffix}.json"),
                      {"info": info, "summary": rows, "runs": runs})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, f"startup_data{suffix}.md"), text)
    print(text)


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
