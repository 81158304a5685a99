"""Step time of a model written with Keras 3 layers against the same model with tfloop's layers.

Usage::

    python bench/keras_layers.py              # mlp + convnet, 15 interleaved rounds (~4 min)
    python bench/keras_layers.py --quick      # fewer steps, 2 rounds
    python bench/keras_layers.py --models mlp --rounds 9

Both variants build the same graph shape with ``SimpleTrainer`` on the same synthetic data
(batch 64, 10 classes, plain SGD, softmax cross-entropy, a tf.data pipeline built in the graph):

* ``tfloop``: ``tfloop.models`` layers (``FullyConnected``, ``Conv2D``, ``MaxPooling``).
* ``keras``: ``keras.layers`` created in ``build_graph`` (``Dense``, ``Conv2D``, ``MaxPooling2D``,
  ``Flatten``), which tfloop maps to graph variables (see ``docs/keras.md``).
* ``keras_init``: the same Keras layers created once in the model's ``__init__``.

Models: ``mlp`` 784-256-10 (ReLU); ``convnet`` 28x28x1 -> conv3x3(16) -> maxpool2 -> conv3x3(32)
-> maxpool2 -> dense 10. No callbacks besides tfloop's defaults, no monitors.

One process runs every round; a round trains each variant once, each in its own graph and
session, in an order that rotates with the round. Time per step: ``time.perf_counter()`` at every
``trigger_step``; a round's figure is the median of its timed steps (robust to other processes'
bursts on a shared machine); the table gives the median over rounds and the min-max, and the
ratio to the tfloop layers paired by round (each round's time over tfloop's in that round, so
that load changes between rounds cancel), its median and min-max, the ratio of the fastest
rounds (the least disturbed by other work), and the median paired ratio of process CPU time.
Results go to ``bench/results/<name>.json`` and ``<name>.md`` (``keras_layers`` by default).
"""
import argparse
import logging
import os
import statistics
import sys
import time

import common  # first: it quiets TensorFlow's logging before TensorFlow is imported
import keras
import numpy as np
import report
import tensorflow as tf
from common import tfv1

import tfloop

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
BATCH, CLASSES, DATA_BATCHES = 64, 10, 32
SCHEDULES = {False: (30, 200), True: (20, 80)}       # --quick -> (warm-up, timed) steps
VARIANTS = ["tfloop", "keras", "keras_init"]
MODELS = {"mlp": (784,), "convnet": (28, 28, 1)}


def tfloop_tower(model, x):
    from tfloop import Conv2D, FullyConnected, MaxPooling
    if model == "mlp":
        return FullyConnected("fc1", FullyConnected("fc0", x, 256, activation=tf.nn.relu), CLASSES)
    x = MaxPooling("pool0", Conv2D("conv0", x, 16, 3, activation=tf.nn.relu), 2)
    x = MaxPooling("pool1", Conv2D("conv1", x, 32, 3, activation=tf.nn.relu), 2)
    return FullyConnected("fc", x, CLASSES)


def keras_layers(model):
    layers = keras.layers
    if model == "mlp":
        return [layers.Dense(256, activation="relu"), layers.Dense(CLASSES)]
    return [layers.Conv2D(16, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
            layers.Conv2D(32, 3, padding="same", activation="relu"), layers.MaxPooling2D(2),
            layers.Flatten(), layers.Dense(CLASSES)]


class Model(tfloop.ModelDesc):
    def __init__(self, model, variant):
        self.model, self.variant = model, variant
        self.layers = keras_layers(model) if variant == "keras_init" else None

    def inputs(self):
        return [tf.TensorSpec((None,) + MODELS[self.model], tf.float32, "x"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        if self.variant == "tfloop":
            logits = tfloop_tower(self.model, x)
        else:
            logits = x
            for layer in self.layers or keras_layers(self.model):
                logits = layer(logits)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.01)


class StepTimes(tfloop.Callback):
    """Wall-clock and process CPU time at the end of every step."""

    def __init__(self):
        self.wall, self.cpu = [], []

    def _trigger_step(self):
        self.wall.append(time.perf_counter())
        self.cpu.append(time.process_time())

    def per_step_ms(self, warmup):
        """(median wall-clock ms of one timed step, mean process CPU ms per timed step)."""
        steps = np.diff(self.wall[warmup - 1:]) * 1000
        return float(np.median(steps)), (self.cpu[-1] - self.cpu[warmup - 1]) / len(steps) * 1000


def run(model, variant, quick):
    """Train one variant; return ``(median wall ms per step, CPU ms per step)`` of the timed
    steps."""
    warmup, timed = SCHEDULES[quick]
    rng = np.random.RandomState(common.SEED)
    x = rng.rand(BATCH * DATA_BATCHES, *MODELS[model]).astype(np.float32)
    y = rng.randint(0, CLASSES, size=len(x)).astype(np.int32)
    timer = StepTimes()
    config = tfloop.TrainConfig(
        model=Model(model, variant),
        data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(BATCH),
        callbacks=[timer], monitors=[], steps_per_epoch=warmup + timed, max_epoch=1)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    return timer.per_step_ms(warmup)


def paired_ratios(times, model, variant):
    """Per round: the variant's time over the tfloop layers' time of the same round."""
    return [t / ref for t, ref in zip(times[model, variant], times[model, "tfloop"])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="mlp,convnet")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="keras_layers")
    args = parser.parse_args(argv)
    models = args.models.split(",")
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}: choose from {sorted(MODELS)}")
    logging.getLogger("tfloop").setLevel(logging.WARNING)
    info = report.machine_info()
    rounds = 2 if args.quick and args.rounds == 15 else args.rounds
    wall = {(m, v): [] for m in models for v in VARIANTS}
    cpu = {(m, v): [] for m in models for v in VARIANTS}
    for r in range(rounds):
        order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
        for model in models:
            for variant in order:
                step_wall, step_cpu = run(model, variant, args.quick)
                wall[model, variant].append(step_wall)
                cpu[model, variant].append(step_cpu)
        print(f"round {r + 1}/{rounds}: " + ", ".join(
            f"{m}/{v} {wall[m, v][-1]:.3f} ms" for m in models for v in VARIANTS), flush=True)
    headers = ["model", "layers", "ms/step (median)", "min-max", "ratio to tfloop layers",
               "ratio min-max", "best-round ratio", "CPU ratio"]
    lines = []
    for model in models:
        for variant in VARIANTS:
            values = wall[model, variant]
            ratios = paired_ratios(wall, model, variant)
            lines.append([model, variant, f"{statistics.median(values):.3f}",
                          f"{min(values):.3f}-{max(values):.3f}",
                          f"{statistics.median(ratios):.3f}",
                          f"{min(ratios):.3f}-{max(ratios):.3f}",
                          f"{min(values) / min(wall[model, 'tfloop']):.3f}",
                          f"{statistics.median(paired_ratios(cpu, model, variant)):.3f}"])
    warmup, timed = SCHEDULES[args.quick]
    info["loadavg_end"] = os.getloadavg()
    info.update(rounds=rounds, warmup_steps=warmup, timed_steps=timed,
                wall_ms={f"{m}/{v}": t for (m, v), t in wall.items()},
                cpu_ms={f"{m}/{v}": t for (m, v), t in cpu.items()})
    text = "\n".join([
        report.machine_line(info), "",
        f"Batch {BATCH}, SimpleTrainer, {rounds} interleaved rounds of {warmup} warm-up + {timed} "
        f"timed steps in one process. ms/step: per round the median of the timed steps' "
        f"wall-clock times, then the median over rounds; ratios: per round, over the same "
        f"model with tfloop layers in that round, then the median (and min-max) over rounds; "
        f"best-round ratio: the fastest round over tfloop's fastest; CPU ratio: the median "
        f"paired ratio of process CPU time per timed step.",
        "", report.table(headers, lines), ""])
    report.write_json(os.path.join(RESULTS, args.name + ".json"), info)
    report.write_text(os.path.join(RESULTS, args.name + ".md"), text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
