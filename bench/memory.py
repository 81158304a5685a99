"""Resident memory over a long run with the default callbacks and monitors: it must stay flat.

Usage::

    python bench/memory.py                      # 100k steps of the MLP (about two minutes)
    python bench/memory.py --quick              # 20k steps
    python bench/memory.py --model tiny         # 100k steps of a tiny model (half a minute)
    python bench/memory.py --method raw --name memory_raw   # the raw Session loop, for reference

The run trains the MLP with ``DatasetInput``, the default callbacks and monitors (a log directory
is set, so event and JSON files are written every epoch), 1000 steps per epoch; the RSS is read
after every epoch. Growth is measured from the end of the first epoch (after warm-up) to the end.
``--model tiny`` (32-16-10) makes steps cheap while everything a step costs in Python
(callbacks, the hooked session, monitors) stays the same; ``--method raw`` runs the plain
``sess.run(train_op)`` loop on the same graph, to tell TensorFlow's own growth from tfloop's.
Results go to ``bench/results/<name>.json`` and ``<name>.md`` (``memory`` by default).
"""
import argparse
import os
import sys
import tempfile
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
TARGET_MB = 20.0


def run_raw(model, steps, steps_per_epoch):
    import common
    sess, train_op, _ = common.raw_graph(common.MODELS[model], feed=False)
    samples = []
    start = time.perf_counter()
    for step in range(1, steps + 1):
        sess.run(train_op)
        if step % steps_per_epoch == 0:
            samples.append((step, common.current_rss_mb(), time.perf_counter() - start))
    return samples


def run(model, steps, steps_per_epoch):
    import common

    import tfloop
    from tfloop.utils import logger
    spec = common.MODELS[model]
    logger.set_logger_dir(tempfile.mkdtemp(prefix="tfloop-memory-"), action="keep")
    samples = []
    start = time.perf_counter()

    class SampleRSS(tfloop.Callback):
        def _trigger_epoch(self):
            samples.append((self.global_step, common.current_rss_mb(),
                            time.perf_counter() - start))
    config = tfloop.TrainConfig(
        model=common.tfloop_model(spec),
        data=tfloop.DatasetInput(common.dataset_fn(spec, repeat=False)),
        callbacks=[SampleRSS()], steps_per_epoch=steps_per_epoch,
        max_epoch=steps // steps_per_epoch)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    return samples


def markdown(result, info):
    samples = result["samples"]
    picks = sorted(set([0, len(samples) // 4, len(samples) // 2, 3 * len(samples) // 4,
                        len(samples) - 1]))
    lines = [[samples[i][0], f"{samples[i][1]:.1f}", f"{samples[i][2]:.0f}"]
             for i in picks]
    verdict = "meets" if result["growth_mb"] < TARGET_MB else "misses"
    return "\n".join([
        "# Memory over {} steps ({}, model {})".format(result["steps"], info["date"],
                                                      info["model"]), "",
        report.machine_line(info),
        ("Raw `sess.run(train_op)` loop, RSS read every {} steps." if info["method"] == "raw" else
         "tfloop, default callbacks + monitors, log dir set, {} steps per epoch.").format(
            result["steps_per_epoch"]), "",
        "RSS growth from the end of epoch 1 to the end: **{:+.1f} MB** (max - min after epoch 1: "
        "{:.1f} MB), which {} the target of < {:.0f} MB.".format(
            result["growth_mb"], result["spread_mb"], verdict, TARGET_MB), "",
        report.table(["global step", "RSS, MB", "seconds"], lines), ""]) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="mlp", help="mlp (default), tiny or convnet")
    parser.add_argument("--method", default="tfloop", choices=["tfloop", "raw"],
                        help="tfloop with the defaults (default), or the raw Session loop")
    parser.add_argument("--steps", type=int, default=None,
                        help="100000 by default, 20000 with --quick")
    parser.add_argument("--steps-per-epoch", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="20k steps")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    parser.add_argument("--name", default="memory",
                        help="results file name, without extension (default: memory)")
    args = parser.parse_args()
    steps = args.steps or (20000 if args.quick else 100000)
    if steps % args.steps_per_epoch or steps < 2 * args.steps_per_epoch:
        parser.error("--steps must be a multiple of --steps-per-epoch, at least two epochs")
    sys.path.insert(0, HERE)
    info = report.machine_info()
    info.update(model=args.model, method=args.method)
    samples = (run_raw if args.method == "raw" else run)(args.model, steps, args.steps_per_epoch)
    info["loadavg_end"] = os.getloadavg()
    after_warmup = [rss for _, rss, _ in samples]
    result = {
        "steps": steps, "steps_per_epoch": args.steps_per_epoch, "samples": samples,
        "growth_mb": after_warmup[-1] - after_warmup[0],
        "spread_mb": max(after_warmup) - min(after_warmup),
        "target_mb": TARGET_MB,
    }
    os.makedirs(args.out, exist_ok=True)
    report.write_json(os.path.join(args.out, args.name + ".json"), {"info": info, "result": result})
    text = markdown(result, info)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
