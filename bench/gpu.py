"""The figures a GPU user asks for first, in one run: ``python bench/gpu.py`` (< 10 minutes).

On a GPU (every figure with the card's name, driver and CUDA/cuDNN versions):

1. ``precision``: images/s of ResNet-50 (224x224, batch 128) and ResNet-20 (32x32, batch 128)
   in float32, bfloat16, float16 and with XLA (``TrainConfig(mixed_precision=..., xla=...)``),
   interleaved rounds, medians of per-round ratios to float32 (``bench/precision.py``).
2. ``input``: input-bound throughput as a fraction of constant-input throughput (ResNet-20):
   a JPEG-decoding ``tf.data`` pipeline (``DatasetInput``) and a Python loader (``QueueInput``
   over numpy batches). Goal >= 0.97.
3. ``loop``: tfloop with its default callbacks against a raw ``session.run`` loop on the same
   graph (ResNet-20). Goal <= 1.02x.
4. ``keras``: Keras 3 ``fit`` of ``keras.applications.ResNet50`` on the same data and batch,
   against tfloop's ResNet-50 float32 figure.

Without a GPU the script shrinks everything (ResNet-20 at batch 8, few steps, ResNet-50 and
Keras at 32x32, batch 4) so that it can be tested on a CPU; the results then say ``"gpu": null``
and must not be quoted as GPU figures. Results go to ``bench/results/gpu.json`` (or ``--out``).

Usage::

    python bench/gpu.py                      # the full run on a GPU machine
    python bench/gpu.py --sections input,loop --out /tmp/gpu.json
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import common  # noqa: F401  (first: it quiets TensorFlow before TensorFlow is imported)
import numpy as np
import precision
import report
import resnet
import tensorflow as tf

import tfloop
from tfloop.compat import tfv1

HERE = os.path.dirname(os.path.abspath(__file__))
SECTIONS = ("precision", "input", "loop", "keras")


def device_info():
    """The card's name and the driver/CUDA/cuDNN versions, or None without a GPU."""
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None
    build = tf.sysconfig.get_build_info()
    info = {"count": len(gpus), "cuda": build.get("cuda_version"),
            "cudnn": build.get("cudnn_version"),
            "name": tf.config.experimental.get_device_details(gpus[0]).get("device_name")}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        info["nvidia_smi"] = out.stdout.strip().splitlines()
    except (OSError, subprocess.SubprocessError) as e:
        info["nvidia_smi"] = f"unavailable: {e}"
    return info


class Plan:
    """Model sizes and step counts: the real ones on a GPU, shrunk ones on a CPU."""

    def __init__(self, gpu):
        self.gpu = gpu
        self.batch = 128 if gpu else 8
        self.steps = (5, 20) if gpu else (1, 2)          # warm-up, timed
        self.rounds = 3 if gpu else 1
        self.models = ["resnet50", "resnet20"] if gpu else ["resnet20"]
        self.keras_size, self.keras_batch = (224, 128) if gpu else (32, 4)


def images_per_s(batch, ms):
    return batch / ms * 1000.0


def run_precision(plan):
    out = {}
    for model in plan.models:
        times = precision.interleaved(
            list(precision.VARIANTS), plan.rounds,
            lambda v, model=model: precision.run(model, v, plan.batch, *plan.steps))
        summary = precision.summarize(times)
        for s in summary.values():
            s["images_per_s"] = images_per_s(plan.batch, s["median_ms"])
        out[model] = summary
    return out


def _jpeg_dataset(batch, seed=0):
    """ResNet-20 inputs decoded from JPEG bytes in the pipeline (8 distinct images)."""
    rng = np.random.RandomState(seed)
    raw = [tf.io.encode_jpeg(tf.constant((rng.rand(32, 32, 3) * 255).astype(np.uint8))).numpy()
           for _ in range(8)]
    labels = rng.randint(0, 10, 8).astype(np.int32)

    def decode(data, label):
        image = tf.image.convert_image_dtype(tf.io.decode_jpeg(data, channels=3), tf.float32)
        return tf.reshape(image, [32, 32, 3]), label
    return lambda: tf.data.Dataset.from_tensor_slices((raw, labels)).repeat().map(
        decode, num_parallel_calls=tf.data.AUTOTUNE).batch(batch).prefetch(2)


def _python_batches(batch, seed=0):
    rng = np.random.RandomState(seed)
    images = rng.rand(4, batch, 32, 32, 3).astype(np.float32)
    labels = rng.randint(0, 10, (4, batch)).astype(np.int32)

    class Batches:
        def __iter__(self):
            while True:
                for i in range(4):
                    yield [images[i], labels[i]]
    return tfloop.QueueInput(Batches())


def _train_ms(data, plan, extra_callbacks=None):
    timer = precision.StepTimes()
    warmup, timed = plan.steps
    config = tfloop.TrainConfig(model=resnet.ResNet("resnet20"), data=data, callbacks=[timer],
                                monitors=[] if extra_callbacks is not None else None,
                                extra_callbacks=extra_callbacks,
                                steps_per_epoch=warmup + timed, max_epoch=1)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    return timer.median_ms(warmup)


def run_input(plan):
    sources = {"constant": lambda: resnet.synthetic_data("resnet20", plan.batch),
               "jpeg_tf_data": lambda: _jpeg_dataset(plan.batch),
               "python_queue": lambda: _python_batches(plan.batch)}
    times = precision.interleaved(list(sources), plan.rounds,
                                  lambda name: _train_ms(sources[name](), plan, []))
    return {name: {"median_ms": float(np.median(times[name])),
                   "fraction_of_constant": float(np.median(
                       [c / t for c, t in zip(times["constant"], times[name])]))}
            for name in sources}


def _raw_loop_ms(plan):
    """The same ResNet-20 graph trained by a plain session loop."""
    warmup, timed = plan.steps
    graph = tf.Graph()
    with graph.as_default():
        model = resnet.ResNet("resnet20")
        image, label = tfv1.data.make_one_shot_iterator(
            resnet.synthetic_data("resnet20", plan.batch)()).get_next()
        with tfloop.TowerContext("", is_training=True):
            cost = model.build_graph(image, label)
        step = tfv1.train.get_or_create_global_step()
        with tf.control_dependencies(tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)):
            train_op = model.optimizer().minimize(cost, global_step=step)
        init = tfv1.global_variables_initializer()
    with tfv1.Session(graph=graph, config=tfloop.default_session_config()) as sess:
        sess.run(init)
        stamps = []
        for _ in range(warmup + timed):
            sess.run(train_op)
            stamps.append(time.perf_counter())
    return float(np.median(np.diff(stamps[warmup - 1:]))) * 1000


def run_loop(plan):
    methods = {"raw_session_loop": lambda: _raw_loop_ms(plan),
               "tfloop_default": lambda: _train_ms(
                   resnet.synthetic_data("resnet20", plan.batch), plan)}
    times = precision.interleaved(list(methods), plan.rounds, lambda m: methods[m]())
    ratios = [t / r for t, r in zip(times["tfloop_default"], times["raw_session_loop"])]
    return {"median_ms": {m: float(np.median(v)) for m, v in times.items()},
            "tfloop_over_raw_median_ratio": float(np.median(ratios))}


def run_keras(plan):
    import keras
    size, batch = plan.keras_size, plan.keras_batch
    model = keras.applications.ResNet50(weights=None, input_shape=(size, size, 3), classes=1000)
    model.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9),
                  loss="sparse_categorical_crossentropy")
    rng = np.random.RandomState(0)
    data = tf.data.Dataset.from_tensor_slices(
        (rng.rand(batch * 2, size, size, 3).astype(np.float32),
         rng.randint(0, 1000, batch * 2).astype(np.int32))).batch(batch).cache().repeat()
    warmup, timed = plan.steps
    model.fit(data, steps_per_epoch=warmup, epochs=1, verbose=0)
    start = time.perf_counter()
    model.fit(data, steps_per_epoch=timed, epochs=1, verbose=0)
    ms = (time.perf_counter() - start) / timed * 1000
    return {"model": f"keras.applications.ResNet50 {size}x{size}", "batch": batch,
            "ms_per_step": ms, "images_per_s": images_per_s(batch, ms)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--out", default=os.path.join(HERE, "results", "gpu.json"))
    args = parser.parse_args(argv)
    sections = args.sections.split(",")
    unknown = [s for s in sections if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}: choose from {list(SECTIONS)}")
    import logging
    logging.getLogger("tfloop").setLevel(logging.ERROR)
    gpu = device_info()
    plan = Plan(gpu)
    results = {"machine": report.machine_info(), "gpu": gpu, "command": " ".join(sys.argv),
               "batch": plan.batch, "steps": plan.steps, "rounds": plan.rounds,
               "shrunk_for_cpu": gpu is None}
    runners = {"precision": run_precision, "input": run_input, "loop": run_loop,
               "keras": run_keras}
    with tempfile.TemporaryDirectory():
        for section in sections:
            start = time.perf_counter()
            results[section] = runners[section](plan)
            print(f"{section}: {time.perf_counter() - start:.0f} s", file=sys.stderr)
    results["machine"]["loadavg_end"] = os.getloadavg()
    report.write_json(args.out, results)
    print(args.out)
    return results


if __name__ == "__main__":
    main()
