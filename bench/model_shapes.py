"""Step time of tfloop against the raw loop on models of different shapes.

Models (plain SGD unless said otherwise, data from a ``tf.data`` pipeline in the graph):

* ``variables_1gb``: a model whose cost is its variables: 16 float32 variables of 62.5 MB
  (1 GB), cost ``sum_k sum(v_k * s)`` with ``s`` a random scalar input; every variable is updated
  at every step and nothing else is computed.
* ``wide_mlp``: 8 dense layers of 2048 x 2048 (ReLU) on 2048 inputs, 10 classes, batch 64.
* ``resnet20``: the CIFAR ResNet-20 of ``bench/resnet.py`` (BatchNorm, weight decay, momentum),
  batch 32.
* ``embedding``: a 1M x 64 embedding table (sparse gradients), 16 ids per example averaged, a
  dense layer to 10 classes, batch 256.
* ``tiny``: 32-16-10, batch 64: a step that is nearly all overhead.

Methods:

* ``raw``: a ``tf.compat.v1`` graph built as TF's documentation does (``opt.minimize(cost,
  global_step)``), its train op called in a loop through ``sess.make_callable(train_op)``: the
  limit, the least Python a session call can take.
* ``raw_run``: the same graph and ``sess.run(train_op)`` in a loop, as TF's documentation and
  most hand-written loops call it.
* ``tfloop``: ``SimpleTrainer`` with the defaults users get (default callbacks and monitors).
* ``tfloop_graph``: tfloop's graph, run by ``sess.run(train_op)`` in a loop (what the graph costs,
  without the hooks).
* ``raw_cost`` (not by default): the raw loop fetching the cost with every step.

Each round runs every method on every model, one run at a time (the 1 GB model's runs never
overlap), in an order that rotates with the round, in this one process. A run builds its graph
and session, takes ``warmup`` steps, times ``steps`` steps, and frees everything. The table gives,
per model, the median step of each method and the median over rounds of the per-round ratio
to ``raw``. Load changes of a shared machine move the absolute numbers; compare ratios.

Usage::

    python bench/model_shapes.py                          # every model, 5 rounds
    python bench/model_shapes.py --models variables_1gb --rounds 7 --methods raw,tfloop,raw_cost

Results go to ``bench/results/model_shapes.json`` and ``.md`` (``--name`` to change).
"""
import argparse
import gc
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import report
from common import log, tf, tfv1

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
METHODS = {
    "raw": "raw tf.compat.v1 loop: opt.minimize(cost, global_step), sess.make_callable(train_op)",
    "raw_run": "the raw loop calling sess.run(train_op)",
    "tfloop": "tfloop SimpleTrainer, default callbacks and monitors",
    "tfloop_graph": "tfloop's graph run by sess.run(train_op) (no hooks)",
    "raw_cost": "raw loop fetching [train_op, cost] with every step",
}
DEFAULT_METHODS = ["raw", "raw_run", "tfloop", "tfloop_graph"]


class Shape:
    """A benchmark model: its inputs, its data, its cost and optimizer, its step counts."""

    def __init__(self, name, specs, data, cost, steps, warmup, optimizer=None):
        self.name, self.specs, self.data, self.cost = name, specs, data, cost
        self.steps, self.warmup = steps, warmup
        self.optimizer = optimizer or (lambda: tfv1.train.GradientDescentOptimizer(0.01))


def _constant_batches(arrays, batch):
    """A function building a repeating dataset of the ``arrays`` in batches of ``batch``."""
    return lambda: tf.data.Dataset.from_tensor_slices(tuple(arrays)).batch(
        batch, drop_remainder=True).cache().repeat()


def _classes(rng, n, classes=10):
    return rng.randint(0, classes, n).astype(np.int32)


def _softmax_cost(logits, label):
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=label,
                                                                         logits=logits),
                          name="cost")


# ---- the models ----------------------------------------------------------------------------------
VARIABLE_CHUNKS, CHUNK_ELEMENTS = 16, 10 ** 9 // 4 // 16


def variables_1gb():
    def data():
        return tf.data.Dataset.random(seed=0).map(
            lambda x: tf.cast(x % 1000, tf.float32) / 1000.0 - 0.5)

    def cost(s):
        parts = [tf.reduce_sum(tfv1.get_variable(f"v{k}", [CHUNK_ELEMENTS],
                                                 initializer=tfv1.zeros_initializer()) * s)
                 for k in range(VARIABLE_CHUNKS)]
        return tf.add_n(parts, name="cost")
    return Shape("variables_1gb", [tf.TensorSpec([], tf.float32, "s")], data, cost,
                 steps=10, warmup=3)


def wide_mlp():
    rng = np.random.RandomState(0)
    x, y = rng.rand(256, 2048).astype(np.float32), _classes(rng, 256)

    def cost(x, label):
        h = x
        for i in range(8):
            h = tf.nn.relu(tf.matmul(h, tfv1.get_variable(f"W{i}", [2048, 2048])) +
                           tfv1.get_variable(f"b{i}", [2048], initializer=tfv1.zeros_initializer()))
        return _softmax_cost(tf.matmul(h, tfv1.get_variable("W_out", [2048, 10])), label)
    return Shape("wide_mlp", [tf.TensorSpec([None, 2048], tf.float32, "x"),
                              tf.TensorSpec([None], tf.int32, "label")],
                 _constant_batches((x, y), 64), cost, steps=20, warmup=3)


def resnet20():
    import resnet
    model = resnet.ResNet("resnet20")

    def cost(image, label):
        return model.build_graph(image, label)
    return Shape("resnet20", model.inputs(), resnet.synthetic_data("resnet20", 32), cost,
                 steps=20, warmup=3, optimizer=model.optimizer)


def embedding():
    rng = np.random.RandomState(0)
    rows, n = 10 ** 6, 1024
    ids, y = rng.randint(0, rows, (n, 16)).astype(np.int64), _classes(rng, n)

    def cost(ids, label):
        table = tfv1.get_variable("table", [rows, 64],
                                  initializer=tfv1.random_normal_initializer(stddev=0.01))
        h = tf.reduce_mean(tf.nn.embedding_lookup(table, ids), axis=1)
        return _softmax_cost(tf.matmul(h, tfv1.get_variable("W", [64, 10])), label)
    return Shape("embedding", [tf.TensorSpec([None, 16], tf.int64, "ids"),
                               tf.TensorSpec([None], tf.int32, "label")],
                 _constant_batches((ids, y), 256), cost, steps=300, warmup=20)


def tiny():
    rng = np.random.RandomState(0)
    x, y = rng.rand(2048, 32).astype(np.float32), _classes(rng, 2048)

    def cost(x, label):
        h = tf.nn.relu(tf.matmul(x, tfv1.get_variable("W0", [32, 16])))
        return _softmax_cost(tf.matmul(h, tfv1.get_variable("W1", [16, 10])), label)
    return Shape("tiny", [tf.TensorSpec([None, 32], tf.float32, "x"),
                          tf.TensorSpec([None], tf.int32, "label")],
                 _constant_batches((x, y), 64), cost, steps=3000, warmup=200)


MODELS = {f.__name__: f for f in (variables_1gb, wide_mlp, resnet20, embedding, tiny)}


# ---- the methods ---------------------------------------------------------------------------------
def _timed_loop(run, warmup, steps):
    """``(mean, median)`` seconds per step of ``steps`` calls of ``run`` after ``warmup``."""
    for _ in range(warmup):
        run()
    stamps = [time.perf_counter()]
    for _ in range(steps):
        run()
        stamps.append(time.perf_counter())
    return _step_times(stamps)


def _step_times(stamps):
    durations = [b - a for a, b in zip(stamps, stamps[1:])]
    return (stamps[-1] - stamps[0]) / len(durations), statistics.median(durations)


def run_raw(shape, fetch_cost=False, callable_=True):
    from tfloop.tfutils.tower import TowerContext
    graph = tf.Graph()
    with graph.as_default():
        inputs = tfv1.data.make_one_shot_iterator(shape.data()).get_next()
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        with TowerContext("", is_training=True):    # tfloop's layers (ResNet) train in one
            cost = shape.cost(*inputs)
        train_op = shape.optimizer().minimize(
            cost, global_step=tfv1.train.get_or_create_global_step())
        update_ops = tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)
        if update_ops:     # batch-norm statistics, as TF's documentation asks
            train_op = tf.group(train_op, *update_ops)
        sess = tfv1.Session(graph=graph)
        sess.run(tfv1.global_variables_initializer())
    fetch = [train_op, cost] if fetch_cost else train_op
    try:
        step = sess.make_callable(fetch) if callable_ else (lambda: sess.run(fetch))
        return _timed_loop(step, shape.warmup, shape.steps)
    finally:
        sess.close()


def _model_desc(shape):
    import tfloop

    class Model(tfloop.ModelDesc):
        def inputs(self):
            return list(shape.specs)

        def build_graph(self, *inputs):
            return shape.cost(*inputs)

        def optimizer(self):
            return shape.optimizer()
    return Model()


def _window(shape, hooks, timed):
    """A callback timing the second epoch of a hooked run (the end of each step; the last one
    ends with the epoch's end), or without hooks ``sess.run(train_op)`` before training."""
    import tfloop

    class Window(tfloop.Callback):
        def _before_train(self):
            if not hooks:
                sess, op = self.trainer.sess, self.trainer.train_op
                timed["step"] = _timed_loop(sess.make_callable(op), shape.warmup, shape.steps)

        def _before_epoch(self):
            if self.epoch_num == 2:
                timed["stamps"] = [time.perf_counter()]

        def _trigger_step(self):
            if "stamps" in timed:
                timed["stamps"].append(time.perf_counter())

        def _after_train(self):
            if hooks:
                timed["stamps"][-1] = time.perf_counter()
                timed["step"] = _step_times(timed["stamps"])
    return Window()


def run_tfloop(shape, hooks=True):
    """``SimpleTrainer`` with the default callbacks and monitors: a warm-up epoch and a timed one
    of ``shape.steps`` steps each; without ``hooks``, its graph run by ``sess.run(train_op)``."""
    import tfloop
    from tfloop.utils import logger
    timed = {}
    logdir = tempfile.mkdtemp(prefix="tfloop-bench-shapes-")
    logger.set_logger_dir(os.path.join(logdir, "log"), action="keep")
    try:
        epochs = dict(steps_per_epoch=shape.steps, max_epoch=2) if hooks else \
            dict(steps_per_epoch=1, max_epoch=1)
        config = tfloop.TrainConfig(model=_model_desc(shape), data=tfloop.DatasetInput(shape.data),
                                    callbacks=[_window(shape, hooks, timed)], **epochs)
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
        shutil.rmtree(logdir, ignore_errors=True)
    return timed["step"]


def run(method, shape):
    if method == "raw":
        return run_raw(shape)
    if method == "raw_run":
        return run_raw(shape, callable_=False)
    if method == "raw_cost":
        return run_raw(shape, fetch_cost=True)
    if method == "tfloop":
        return run_tfloop(shape)
    if method == "tfloop_graph":
        return run_tfloop(shape, hooks=False)
    raise ValueError(f"Unknown method {method!r}; known: {', '.join(METHODS)}.")


# ---- rounds and the table ------------------------------------------------------------------------
def measure(models, methods, rounds):
    """``{model: {method: [(mean s, median s) per round]}}``."""
    steps = {m: {k: [] for k in methods} for m in models}
    for r in range(rounds):
        order = methods[r % len(methods):] + methods[:r % len(methods)]
        for model in models:
            for method in order:
                shape = MODELS[model]()
                mean, median = run(method, shape)
                steps[model][method].append((mean, median))
                del shape
                gc.collect()
                log(f"round {r + 1}/{rounds} {model} {method}: {mean * 1e3:.2f} ms/step mean, "
                    f"{median * 1e3:.2f} median (load {os.getloadavg()[0]:.1f})")
    return steps


def _ratios(times, reference, which):
    return [t[which] / r[which] for t, r in zip(times, reference)]


def summarize(steps, methods):
    rows = []
    for model, per_method in steps.items():
        raw = per_method.get("raw")
        for method in methods:
            times = per_method[method]
            row = {"model": model, "method": method, "rounds": len(times),
                   "mean_ms": 1e3 * statistics.median(t[0] for t in times),
                   "median_ms": 1e3 * statistics.median(t[1] for t in times)}
            if raw:
                for which, key in ((0, "mean"), (1, "median")):
                    ratios = _ratios(times, raw, which)
                    row[f"{key}_ratio"] = statistics.median(ratios)
                    row[f"{key}_ratio_range"] = (min(ratios), max(ratios))
            if per_method.get("raw_run"):
                ratios = _ratios(times, per_method["raw_run"], 1)
                row["median_run_ratio"] = statistics.median(ratios)
                row["median_run_ratio_range"] = (min(ratios), max(ratios))
            rows.append(row)
    return rows


def _ratio_cell(row, key):
    if f"{key}_ratio" not in row:
        return "-"
    low, high = row[f"{key}_ratio_range"]
    return f"{row[key + '_ratio']:.3f} ({low:.2f}-{high:.2f})"


def markdown(rows, info):
    lines = [[r["model"], r["method"], f"{r['mean_ms']:.2f}", _ratio_cell(r, "mean"),
              f"{r['median_ms']:.2f}", _ratio_cell(r, "median"), _ratio_cell(r, "median_run")]
             for r in rows]
    legend = [f"- `{m}`: {METHODS[m]}" for m in info["methods"]]
    return "\n".join([
        f"# Step time by model shape ({info['date']})", "",
        report.machine_line(info),
        f"Rounds: {info['rounds']}, every method on every model per round, in one process. Mean: "
        "the timed steps' wall time (for tfloop: the whole second epoch, its end included) per "
        "step; median: the median step. Ratios: the median over rounds of the round's value / "
        "raw's (or raw_run's) value in the same round (min-max in brackets).", "",
        report.table(["model", "method", "mean ms/step", "ratio to raw", "median step ms",
                      "ratio to raw", "ratio to raw_run"], lines), ""] + legend) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS), help=", ".join(MODELS))
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS), help=", ".join(METHODS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--name", default="model_shapes")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    models, methods = args.models.split(","), args.methods.split(",")
    info = report.machine_info()
    info.update(methods=methods, models=models, rounds=args.rounds)
    steps = measure(models, methods, args.rounds)
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(steps, methods)
    report.write_json(os.path.join(args.out, args.name + ".json"),
                      {"info": info, "rows": rows, "steps_s": steps})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
