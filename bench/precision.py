"""Step time of ResNet-20 (32x32x3, batch 128) in float32, bfloat16, float16 and with XLA.

Usage::

    python bench/precision.py                    # 3 interleaved rounds (~5 min on 2 cores)
    python bench/precision.py --quick            # batch 32, 2 rounds, few steps
    TF_ENABLE_ONEDNN_OPTS=1 python bench/precision.py --name precision_onednn

Each variant is ``TrainConfig(mixed_precision=..., xla=...)`` with ``SimpleTrainer``, the
default callbacks, no monitors, on constant synthetic data (``bench/resnet.py``). One process
runs every round; a round trains each variant once, each in its own graph and session, in an
order that rotates with the round. A round's figure is the median time of its timed steps; the
table gives the median over rounds and the median of the per-round ratios to float32 (each
round's time over float32's in that round, so load changes between rounds cancel). The load
average at start and end is recorded. Whether TensorFlow's oneDNN optimizations are on (they
decide whether the bfloat16 rewrite runs) and the CPU's AMX/AVX512-BF16 flags are recorded too.
Results go to ``bench/results/<name>.json`` and ``<name>.md``.
"""
import argparse
import logging
import os
import statistics
import sys
import time

import common  # noqa: F401  (first: it quiets TensorFlow before TensorFlow is imported)
import numpy as np
import report
import resnet

import tfloop

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
VARIANTS = {"float32": {}, "bfloat16": {"mixed_precision": "bfloat16"},
            "float16": {"mixed_precision": "float16"}, "xla": {"xla": True}}


class StepTimes(tfloop.Callback):
    def __init__(self):
        self.wall = []

    def _trigger_step(self):
        self.wall.append(time.perf_counter())

    def median_ms(self, warmup):
        return float(np.median(np.diff(self.wall[warmup - 1:]))) * 1000


def run(model, variant, batch, warmup, timed):
    """Train one variant; the median ms of its timed steps."""
    timer = StepTimes()
    config = tfloop.TrainConfig(model=resnet.ResNet(model),
                                data=resnet.synthetic_data(model, batch),
                                callbacks=[timer], monitors=[], steps_per_epoch=warmup + timed,
                                max_epoch=1, **VARIANTS[variant])
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    return timer.median_ms(warmup)


def cpu_bf16_flags():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return []
    return sorted(x for x in flags.split() if x.startswith("amx") or x == "avx512_bf16")


def onednn_enabled():
    from tensorflow.python.util import _pywrap_util_port
    return bool(_pywrap_util_port.IsMklEnabled())


def interleaved(variants, rounds, step):
    """``step(variant)`` for every variant in every round, the order rotating by round."""
    times = {v: [] for v in variants}
    for r in range(rounds):
        for variant in variants[r % len(variants):] + variants[:r % len(variants)]:
            times[variant].append(step(variant))
        print(f"round {r + 1}/{rounds}: " + ", ".join(
            f"{v} {times[v][-1]:.0f} ms" for v in variants), file=sys.stderr)
    return times


def summarize(times, reference="float32"):
    """Per variant: median ms over rounds, and the median of per-round ratios to ``reference``."""
    out = {}
    for variant, values in times.items():
        ratios = [t / ref for t, ref in zip(values, times[reference])]
        out[variant] = {"median_ms": statistics.median(values), "ms": values,
                        "ratio_median": statistics.median(ratios),
                        "ratio_min": min(ratios), "ratio_max": max(ratios)}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet20", choices=sorted(resnet.SPECS))
    parser.add_argument("--batch", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--steps", help="warm-up,timed steps per variant and round (3,8)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--name", default="precision")
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or "float32" not in variants:
        parser.error(f"variants must include float32 and come from {list(VARIANTS)}")
    logging.getLogger("tfloop").setLevel(logging.ERROR)
    batch = args.batch or (32 if args.quick else 128)
    rounds = args.rounds or (2 if args.quick else 3)
    warmup, timed = (2, 3) if args.quick else (3, 8)
    if args.steps:
        warmup, timed = (int(x) for x in args.steps.split(","))
    info = report.machine_info()
    info.update(onednn=onednn_enabled(), cpu_bf16_flags=cpu_bf16_flags())
    times = interleaved(variants, rounds, lambda v: run(args.model, v, batch, warmup, timed))
    info["loadavg_end"] = os.getloadavg()
    summary = summarize(times)
    rows = [[f"`{v}`", f"{s['median_ms']:.0f}", f"{batch / s['median_ms'] * 1000:.0f}",
             f"**{s['ratio_median']:.3f}x** ({s['ratio_min']:.3f}-{s['ratio_max']:.3f})"]
            for v, s in summary.items()]
    text = "\n\n".join([
        f"# {args.model} step time by precision (`bench/precision.py`)",
        report.machine_line(info),
        (f"{args.model}, batch {batch}; {rounds} interleaved rounds of {warmup} warm-up + {timed} "
         f"timed steps per variant. oneDNN optimizations: {'on' if info['onednn'] else 'off'}; "
         f"CPU bfloat16 flags: {', '.join(info['cpu_bf16_flags']) or 'none'}."),
        report.table(["variant", "ms/step (median of rounds)", "images/s",
                      "time / float32, median of per-round ratios (min-max)"], rows),
    ]) + "\n"
    report.write_json(os.path.join(RESULTS, f"{args.name}.json"), {
        "machine": info, "model": args.model, "batch": batch, "rounds": rounds,
        "steps": [warmup, timed], "variants": summary})
    report.write_text(os.path.join(RESULTS, f"{args.name}.md"), text)
    print(text)


if __name__ == "__main__":
    main()
