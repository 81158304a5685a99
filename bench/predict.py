"""Predictor latency (batch 1) and throughput (batch 256) against a raw ``session.run`` on the same
graph and session, against ``Session.make_callable`` (the floor of a session call), and against the
exported SavedModel loaded with ``tf.saved_model.load`` and called eagerly.

Usage::

    python bench/predict.py                 # 20 rounds (~2 min)
    python bench/predict.py --quick         # 2 short rounds

The model is the benchmarks' MLP (784-256-10, ReLU, softmax). In each round every method runs
its calls back to back, and the methods' order rotates from round to round, so that load changes
on a shared machine spread over all of them; the table gives each method's best and median
round. Results go to ``bench/results/predict.json`` and ``bench/results/predict.md``.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import report  # noqa: E402
import tensorflow as tf  # noqa: E402

import tfloop  # noqa: E402
from tfloop.compat import tfv1  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
N_IN, N_HIDDEN, N_OUT = 784, 256, 10
METHODS = {
    "raw_run": "sess.run(prob, {x: batch}) on the predictor's own graph and session",
    "raw_callable": "sess.make_callable(prob, feed_list=[x]) on the same graph: the floor",
    "predictor": "tfloop OfflinePredictor(config)(batch)",
    "saved_model": "tf.saved_model.load(export).signatures['serving_default'](x=batch), eager",
    "checks_only": "the predictor's own work per call alone: checking the input's dtype and shape",
}


class MLP(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, N_IN], tf.float32, "x")]

    def build_graph(self, x):
        w1 = tfv1.get_variable("fc1/W", [N_IN, N_HIDDEN])
        b1 = tfv1.get_variable("fc1/b", [N_HIDDEN], initializer=tfv1.zeros_initializer())
        w2 = tfv1.get_variable("fc2/W", [N_HIDDEN, N_OUT])
        hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
        tf.nn.softmax(tf.matmul(hidden, w2), name="prob")


def build(export_dir):
    rng = np.random.RandomState(0)
    weights = {"fc1/W": rng.randn(N_IN, N_HIDDEN).astype(np.float32) * 0.05,
               "fc1/b": np.zeros(N_HIDDEN, np.float32),
               "fc2/W": rng.randn(N_HIDDEN, N_OUT).astype(np.float32) * 0.05}
    config = tfloop.PredictConfig(model=MLP(), session_init=weights, output_names=["prob"])
    predictor = tfloop.OfflinePredictor(config)
    tfloop.ModelExporter(config).export_serving(export_dir)
    x_tensor, = predictor.input_tensors
    prob_tensor, = predictor.output_tensors
    sess = predictor.sess
    raw_callable = sess.make_callable([prob_tensor], feed_list=[x_tensor])
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    check = predictor._specs[0].check
    return {
        "checks_only": lambda x: [check(x, "bench")],
        "raw_run": lambda x: sess.run([prob_tensor], {x_tensor: x}),
        "raw_callable": lambda x: raw_callable(x),
        "predictor": lambda x: predictor(x),
        "saved_model": lambda x: [signature(x=tf.constant(x))["prob"].numpy()],
    }


def time_calls(fn, x, calls):
    fn(x)
    start = time.perf_counter()
    for _ in range(calls):
        fn(x)
    return (time.perf_counter() - start) / calls


def check_outputs(methods, x):
    reference = methods["raw_run"](x)[0]
    for name, fn in methods.items():
        if name == "checks_only":
            continue
        np.testing.assert_allclose(fn(x)[0], reference, rtol=1e-5, atol=1e-6, err_msg=name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 short rounds")
    parser.add_argument("--rounds", type=int, help="rounds (default 20, 2 with --quick)")
    args = parser.parse_args()
    rounds = args.rounds or (2 if args.quick else 20)
    calls = {1: 300 if args.quick else 500, 256: 10 if args.quick else 30}
    info = report.machine_info()
    with tempfile.TemporaryDirectory() as tmp:
        methods = build(os.path.join(tmp, "export"))
        rng = np.random.RandomState(1)
        data = {b: rng.rand(b, N_IN).astype(np.float32) for b in calls}
        check_outputs(methods, data[256])
        times = {(m, b): [] for m in methods for b in calls}
        names = list(methods)
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for batch in calls:
                for name in order:
                    times[(name, batch)].append(time_calls(methods[name], data[batch],
                                                           calls[batch]))
            print(f"round {r + 1}/{rounds} done", file=sys.stderr)
    info["loadavg_end"] = os.getloadavg()
    best = {key: min(v) for key, v in times.items()}
    median = {key: statistics.median(v) for key, v in times.items()}
    rows = []
    for name in names[1:]:
        rows.append([f"`{name}`"] + [
            f"{stat[(name, 1)] * 1e6:.1f} ({(stat[(name, 1)] - stat[('raw_run', 1)]) * 1e6:+.1f})"
            for stat in (best, median)] + [
            f"{256 / stat[(name, 256)]:,.0f} "
            f"({(stat[(name, 256)] / stat[('raw_run', 256)] - 1) * 100:+.1f}%)"
            for stat in (best, median)])
    overhead_1 = statistics.median(
        (p - r) * 1e6 for p, r in zip(times[("predictor", 1)], times[("raw_run", 1)]))
    overhead_256 = (statistics.median(
        p / r for p, r in zip(times[("predictor", 256)], times[("raw_run", 256)])) - 1) * 100
    verdict = (f"Predictor overhead over raw `session.run`, median of the per-round differences "
               f"(ratios): {overhead_1:+.1f} µs per call at batch 1 (target <= 50 µs), "
               f"{overhead_256:+.1f}% time at batch 256 (target <= 5%). Best rounds: "
               f"{(best[('predictor', 1)] - best[('raw_run', 1)]) * 1e6:+.1f} µs at batch 1. "
               "The predictor's own work (input checks, measured alone) is "
               f"{best[('checks_only', 1)] * 1e6:.2f} µs per call at batch 1 and "
               f"{best[('checks_only', 256)] * 1e6:.2f} µs at batch 256; the rest is the session "
               "call, which is `make_callable`'s (faster than `session.run`).")
    text = "\n\n".join([
        "# Predictor latency and throughput (`bench/predict.py`)",
        report.machine_line(info),
        (f"MLP {N_IN}-{N_HIDDEN}-{N_OUT}; {rounds} rounds; {calls[1]} calls per round at batch "
         f"1, {calls[256]} at batch 256. Each cell: the best round, and the median round; in "
         "parentheses the difference to `raw_run` (µs per call, or time per batch in %). On a "
         "shared machine the best round is the method's own cost, the median adds the load."),
        report.table(["method", "batch 1 µs/call, best", "batch 1 µs/call, median",
                      "batch 256 samples/s, best", "batch 256 samples/s, median"], rows),
        verdict,
        "\n".join(f"* `{k}`: {v}" for k, v in METHODS.items()),
    ]) + "\n"
    report.write_json(os.path.join(RESULTS, "predict.json"), {
        "machine": info, "rounds": rounds, "calls": calls,
        "seconds_per_call": {f"{m}@{b}": v for (m, b), v in times.items()},
        "overhead_us_batch1": overhead_1, "overhead_pct_batch256": overhead_256})
    report.write_text(os.path.join(RESULTS, "predict.md"), text)
    print(text)


if __name__ == "__main__":
    main()
