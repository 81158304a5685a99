"""bfloat16 against float32 in tfloop and in Keras 3 (``mixed_bfloat16`` policy), on ResNet-20.

Usage::

    TF_ENABLE_ONEDNN_OPTS=1 python bench/bf16.py             # batch 128, 3 rounds
    TF_ENABLE_ONEDNN_OPTS=1 python bench/bf16.py --quick     # batch 8, 1 round, 1+2 steps
    TF_ENABLE_ONEDNN_OPTS=0 python bench/bf16.py --name bf16_onednn_off

Variants, each trained from scratch on the same constant synthetic data (``bench/resnet.py``):

* ``tfloop_float32`` / ``tfloop_bfloat16``: ``TrainConfig(mixed_precision=None | "bfloat16")``
  with ``SimpleTrainer``, tfloop's layers, the default callbacks, no monitors.
* ``keras_float32`` / ``keras_mixed_bfloat16``: the same network with Keras 3 layers
  (``resnet.keras_model``) under the ``float32`` or ``mixed_bfloat16`` dtype policy, ``fit``
  with Keras's defaults (no XLA on a CPU).

One process runs every round; a round trains each variant once, in an order that rotates with
the round. A round's figure is the median time of its timed steps. Each framework's bfloat16 is
compared with its own float32 in the same round (the median of per-round ratios, so that load
changes between rounds cancel), and the two ratios with each other per round. The tfloop bfloat16
step is also run once with its partition graphs recorded: the nodes, Cast nodes and bfloat16
nodes that really run. Whether oneDNN is on (the bfloat16 rewrite needs it) and the CPU's
AMX/AVX512-BF16 flags are recorded: without them TensorFlow emulates bfloat16 arithmetic.
Results go to ``bench/results/<name>.json`` and ``<name>.md``.
"""
import argparse
import collections
import logging
import os
import statistics
import sys
import time

import common  # noqa: F401  (first: it quiets TensorFlow before TensorFlow is imported)
import numpy as np
import report
import resnet
from precision import StepTimes, cpu_bf16_flags, interleaved, onednn_enabled

import tfloop
from tfloop.compat import tf, tfv1

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
VARIANTS = ["tfloop_float32", "tfloop_bfloat16", "keras_float32", "keras_mixed_bfloat16"]
PAIRS = {"tfloop": ("tfloop_float32", "tfloop_bfloat16"),
         "keras": ("keras_float32", "keras_mixed_bfloat16")}


class StepNodes(tfloop.Callback):
    """After training, one more step with its partition graphs: node, Cast and bfloat16 counts."""

    def _after_train(self):
        metadata = tfv1.RunMetadata()
        self.trainer.sess.run(self.trainer.train_op,
                              options=tfv1.RunOptions(output_partition_graphs=True),
                              run_metadata=metadata)
        nodes = [n for g in metadata.partition_graphs for n in g.node]
        bf16 = tf.bfloat16.as_datatype_enum
        self.counts = {
            "nodes": len(nodes), "casts": sum(n.op == "Cast" for n in nodes),
            "bfloat16": dict(collections.Counter(
                n.op for n in nodes
                if any(k in n.attr and n.attr[k].type == bf16 for k in ("T", "DstT")))),
        }


def run_tfloop(model, precision, batch, warmup, timed, nodes=None):
    """Train one tfloop variant; the median ms of its timed steps. With ``nodes`` (a dict), the
    step's counts of :class:`StepNodes` go into it."""
    timer = StepTimes()
    probe = StepNodes() if nodes is not None else None
    config = tfloop.TrainConfig(model=resnet.ResNet(model),
                                data=resnet.synthetic_data(model, batch),
                                callbacks=[timer] + ([probe] if probe is not None else []),
                                monitors=[],
                                steps_per_epoch=warmup + timed, max_epoch=1,
                                mixed_precision=precision)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    if probe is not None:
        nodes.update(probe.counts)
    return timer.median_ms(warmup)


def run_keras(model, policy, batch, warmup, timed):
    import keras

    class Times(keras.callbacks.Callback):
        wall = []

        def on_train_batch_end(self, batch, logs=None):
            self.wall.append(time.perf_counter())

    keras.backend.clear_session()
    keras.mixed_precision.set_dtype_policy(policy)
    try:
        net = resnet.keras_model(model)
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    net.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    times = Times()
    net.fit(resnet.synthetic_data(model, batch)(), steps_per_epoch=warmup + timed, epochs=1,
            callbacks=[times], verbose=0)
    return float(np.median(np.diff(times.wall[warmup - 1:]))) * 1000


def summarize(times):
    """Per variant the median ms; per framework the per-round bfloat16/float32 ratios; and the
    per-round ratio of tfloop's ratio to Keras's."""
    ratios = {name: [b / f for f, b in zip(times[fp32], times[bf16])]
              for name, (fp32, bf16) in PAIRS.items()}
    versus = [t / k for t, k in zip(ratios["tfloop"], ratios["keras"])]
    spread = {name: {"median": statistics.median(r), "min": min(r), "max": max(r), "all": r}
              for name, r in dict(ratios, tfloop_over_keras=versus).items()}
    return {"ms": {v: {"median": statistics.median(t), "all": t} for v, t in times.items()},
            "ratios": spread}


def render(args, info, batch, steps, summary, nodes):
    ms, ratios = summary["ms"], summary["ratios"]
    framework = {v: v.split("_")[0] for v in VARIANTS}
    rows = []
    for v in VARIANTS:
        r = ratios[framework[v]]
        ratio = "1.000x" if v.endswith("float32") else \
            f"**{r['median']:.3f}x** ({r['min']:.3f}-{r['max']:.3f})"
        rows.append([f"`{v}`", f"{ms[v]['median']:.0f}",
                     f"{batch / ms[v]['median'] * 1000:.1f}", ratio])
    v = ratios["tfloop_over_keras"]
    return "\n\n".join([
        f"# {args.model}: bfloat16 against float32, tfloop and Keras 3 (`bench/bf16.py`)",
        report.machine_line(info),
        (f"{args.model}, batch {batch}; {args.rounds} interleaved rounds of {steps[0]} warm-up + "
         f"{steps[1]} timed steps per variant. oneDNN optimizations: "
         f"{'on' if info['onednn'] else 'off'}; CPU bfloat16 flags: "
         f"{', '.join(info['cpu_bf16_flags']) or 'none (bfloat16 is emulated)'}."),
        report.table(["variant", "ms/step (median of rounds)", "images/s",
                      "time / the same framework's float32, median of per-round ratios "
                      "(min-max)"], rows),
        (f"tfloop's bfloat16 ratio over Keras's: **{v['median']:.3f}** "
         f"({v['min']:.3f}-{v['max']:.3f}); below 1: tfloop's bfloat16 gains more."),
        (f"tfloop's bfloat16 step as run: {nodes['nodes']} nodes, {nodes['casts']} Cast, "
         f"{sum(nodes['bfloat16'].values())} in bfloat16 "
         f"({', '.join(f'{k} {c}' for k, c in sorted(nodes['bfloat16'].items()))})."),
    ]) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet20", choices=sorted(resnet.SPECS))
    parser.add_argument("--batch", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--steps", help="warm-up,timed steps per variant and round (2,4)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="bf16")
    args = parser.parse_args(argv)
    logging.getLogger("tfloop").setLevel(logging.ERROR)
    batch = args.batch or (8 if args.quick else 128)
    args.rounds = args.rounds or (1 if args.quick else 3)
    steps = (1, 2) if args.quick else (2, 4)
    if args.steps:
        steps = tuple(int(x) for x in args.steps.split(","))
    info = report.machine_info()
    info.update(onednn=onednn_enabled(), cpu_bf16_flags=cpu_bf16_flags())
    nodes = {}
    run = {"tfloop_float32": lambda: run_tfloop(args.model, None, batch, *steps),
           "tfloop_bfloat16": lambda: run_tfloop(args.model, "bfloat16", batch, *steps, nodes),
           "keras_float32": lambda: run_keras(args.model, "float32", batch, *steps),
           "keras_mixed_bfloat16": lambda: run_keras(args.model, "mixed_bfloat16", batch,
                                                     *steps)}
    times = interleaved(VARIANTS, args.rounds, lambda v: run[v]())
    info["loadavg_end"] = os.getloadavg()
    summary = summarize(times)
    text = render(args, info, batch, steps, summary, nodes)
    report.write_json(os.path.join(RESULTS, f"{args.name}.json"), {
        "machine": info, "model": args.model, "batch": batch, "rounds": args.rounds,
        "steps": list(steps), "step_nodes": nodes, **summary})
    report.write_text(os.path.join(RESULTS, f"{args.name}.md"), text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
