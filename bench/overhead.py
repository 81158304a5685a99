"""Step throughput of tfloop against the raw TensorFlow loop (the limit) and against Keras 3 fit.

Usage::

    python bench/overhead.py                  # every method, mlp + convnet, 3 repeats (~10 min)
    python bench/overhead.py --quick          # a short run: fewer steps, one repeat
    python bench/overhead.py --methods raw_dataset,tfloop_default --models mlp --repeats 5
    python bench/overhead.py --baseline-src /tmp/tfloop_old   # also time another tfloop source tree
    python bench/overhead.py --models tiny --name overhead_tiny  # where per-step overhead dominates
    python bench/overhead.py --in-process     # all methods in one process per repeat (tighter)

Every (method, repeat) runs in a fresh Python process, which trains each selected model once;
the methods are interleaved (the order rotates with each repeat) so that load changes on the
machine spread over all of them. With ``--in-process`` each repeat is one fresh process that
runs every method in turn (each with its own graph and session): methods then follow each other
within seconds, which takes most of a shared machine's load swings out of their ratios. Results
go to ``bench/results/<name>.json`` and ``bench/results/<name>.md`` (``overhead`` by default).
Compare ratios taken in one run only: absolute numbers move a lot between runs on a shared
machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import report

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
REFERENCE = "raw_dataset"
STEPS_PER_RUN = 10

METHODS = {
    "raw_dataset": "(1) raw tf.compat.v1 Session loop, sess.run(train_op), tf.data in the graph",
    "raw_feed": "(2) raw Session loop fed by feed_dict from numpy batches",
    "raw_callable": "(1b) (1) calling Session.make_callable(train_op) instead of sess.run: the "
                    "floor of a session call's cost",
    "tfloop_bare": "(3) tfloop SimpleTrainer, DatasetInput, no callbacks or monitors",
    "tfloop_default": "(4) tfloop SimpleTrainer, DatasetInput, default callbacks + monitors",
    "tfloop_typical": "(5) (4) + ModelSaver every epoch, ScheduledHyperParamSetter, "
                      "InferenceRunner (its time excluded)",
    "keras_fit": "(6) Keras 3 model.fit, same layers, data and SGD, default settings",
    "tfloop_spr": f"(7) (4) with steps_per_run={STEPS_PER_RUN}",
    "tfloop_feed": "(8) (4) with FeedInput (feed_dict) instead of DatasetInput; compare to (2)",
    "raw_unknown": "(1u) (1) on the pipeline of unknown length of (9), repeated with .repeat()",
    "tfloop_unknown": "(9) (4) on data of unknown length (a filter keeping every batch; passes of "
                      "steps_per_epoch batches), steps_per_epoch given",
    "tfloop_passes": "(10) (9) without steps_per_epoch: each epoch one pass, its end fetched with "
                     "every step; compare to (9)",
}
DEFAULT_METHODS = ["raw_dataset", "raw_callable", "raw_feed", "tfloop_bare", "tfloop_default",
                   "tfloop_typical", "keras_fit", "tfloop_spr", "tfloop_feed"]
BASELINE_METHODS = ["tfloop_bare", "tfloop_default"]
BASELINE_SUFFIX = "@baseline"


# The tfloop methods: the arguments of common.run_tfloop besides the model and the schedule.
TFLOOP_RUNS = {
    "tfloop_bare": dict(callbacks="none"),
    "tfloop_default": dict(callbacks="default"),
    "tfloop_typical": dict(callbacks="typical"),
    "tfloop_spr": dict(callbacks="default", steps_per_run=STEPS_PER_RUN),
    "tfloop_feed": dict(callbacks="default", feed=True),
    "tfloop_unknown": dict(callbacks="default", unknown_length="fixed"),
    "tfloop_passes": dict(callbacks="default", unknown_length="passes"),
}


def run_method(method, spec, quick):
    import common
    steps_per_epoch, epochs = spec.schedule(quick)
    if method == "raw_dataset":
        return common.run_raw(spec, steps_per_epoch, epochs)
    if method == "raw_feed":
        return common.run_raw(spec, steps_per_epoch, epochs, feed=True)
    if method == "raw_callable":
        return common.run_raw(spec, steps_per_epoch, epochs, callable_=True)
    if method == "raw_unknown":
        return common.run_raw(spec, steps_per_epoch, epochs, unknown_length=True)
    if method in TFLOOP_RUNS:
        return common.run_tfloop(spec, steps_per_epoch, epochs, **TFLOOP_RUNS[method])
    if method == "keras_fit":
        return common.run_keras(spec, steps_per_epoch, epochs)
    raise ValueError("Unknown method {!r}; known: {}.".format(method, ", ".join(METHODS)))


def child(args):
    """Run the methods (comma-separated) on each model in this process, one after the other;
    print one JSON line per run."""
    import common
    for name in args.models:
        for method in args.child.split(","):
            result = run_method(method, common.MODELS[name], args.quick)
            if method.startswith("tfloop"):
                import tfloop
                result["tfloop_path"] = os.path.dirname(tfloop.__file__)
            result.update(method=method, model=name)
            print(json.dumps(result), flush=True)


def spawn(methods, models, quick, baseline_src, timeout):
    """Run ``methods`` in one fresh process; a method named ``<m>@baseline`` runs alone, with
    the baseline source tree first on the path."""
    method = methods[0]
    base = method[:-len(BASELINE_SUFFIX)] if method.endswith(BASELINE_SUFFIX) else None
    env = dict(os.environ)
    if base is not None:
        env["PYTHONPATH"] = os.pathsep.join([baseline_src] +
                                            [p for p in [env.get("PYTHONPATH")] if p])
    cmd = [sys.executable, os.path.abspath(__file__), "--child", base or ",".join(methods),
           "--models", ",".join(models)]
    if quick:
        cmd.append("--quick")
    proc = subprocess.run(cmd, capture_output=True, env=env,
                          timeout=timeout, text=True)
    if proc.returncode != 0:
        raise RuntimeError("{} failed (exit {}):\n{}".format(",".join(methods), proc.returncode,
                                                              proc.stderr[-4000:]))
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if base is not None:
        for r in results:
            r["method"] = method
    return results


def summarize(runs, methods, models):
    rows = []
    for model in models:
        per_step = {}
        for method in methods:
            mine = [r for r in runs if r["method"] == method and r["model"] == model]
            if not mine:
                continue
            rates = [r["steps"] / r["wall_s"] for r in mine]
            per_step[method] = statistics.median(r["wall_s"] / r["steps"] for r in mine)
            rows.append({
                "model": model, "method": method, "repeats": len(mine),
                "steps_per_s_median": statistics.median(rates),
                "steps_per_s_min": min(rates), "steps_per_s_max": max(rates),
                "cpu_ms_per_step": statistics.median(1e3 * r["cpu_s"] / r["steps"] for r in mine),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in mine),
            })
        ref = per_step.get(REFERENCE)
        ref_cpu = next((row["cpu_ms_per_step"] for row in rows
                        if row["model"] == model and row["method"] == REFERENCE), None)
        for row in rows:
            if row["model"] != model:
                continue
            row["time_ratio"] = per_step[row["method"]] / ref if ref else None
            row["cpu_ratio"] = row["cpu_ms_per_step"] / ref_cpu if ref_cpu else None
    return rows


def markdown(rows, info):
    headers = ["model", "method", "steps/s (median)", "min-max", "CPU ms/step", "time ratio to (1)",
               "CPU ratio to (1)"]
    lines = []
    for row in rows:
        lines.append([row["model"], row["method"], "{:.0f}".format(row["steps_per_s_median"]),
                      "{:.0f}-{:.0f}".format(row["steps_per_s_min"], row["steps_per_s_max"]),
                      "{:.2f}".format(row["cpu_ms_per_step"]),
                      "{:.3f}".format(row["time_ratio"]) if row["time_ratio"] else "-",
                      "{:.3f}".format(row["cpu_ratio"]) if row["cpu_ratio"] else "-"])
    legend = []
    for m in info["methods"]:
        baseline = m.endswith(BASELINE_SUFFIX)
        legend.append("- `{}`: {}{}".format(m, METHODS[m.replace(BASELINE_SUFFIX, "")],
                                            " (baseline source tree)" if baseline else ""))
    return "\n".join([
        "# Step overhead ({})".format(info["date"]),
        "",
        report.machine_line(info),
        "Repeats: {}, {}; {}; time ratio = median time per step / median time per step of `{}`."
        .format(info["repeats"], "all methods one after the other in one fresh process per repeat"
                if info.get("in_process") else "a fresh process per method and repeat",
                info["schedule"], REFERENCE),
        "",
        report.table(headers, lines),
        "",
    ] + legend) + "\n"


def _describe_schedule(spec, quick):
    steps_per_epoch, epochs = spec.schedule(quick)
    return f"{spec.name}: {steps_per_epoch} warm-up + {steps_per_epoch * epochs} timed steps"


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--models", default="mlp,convnet",
                        help="comma-separated: mlp, convnet, tiny")
    parser.add_argument("--repeats", type=int, default=None, help="3 by default, 1 with --quick")
    parser.add_argument("--quick", action="store_true", help="fewer steps and one repeat")
    parser.add_argument("--baseline-src", default=None,
                        help="a directory holding another tfloop package: also time "
                             "tfloop_bare and tfloop_default with it, as <method>@baseline")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    parser.add_argument("--in-process", action="store_true",
                        help="run every method in the same fresh process per repeat, one after "
                             "the other: much less noise between methods than one process each")
    parser.add_argument("--name", default=None,
                        help="results file name, without extension (default: overhead, or "
                             "overhead_inprocess with --in-process)")
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per process")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    return parser


def _methods(parser, args, models):
    """The methods to time, checked (with the baseline's copies for --baseline-src)."""
    for m in args.models:
        if m not in models:
            parser.error("unknown model {!r}; known: {}".format(m, ", ".join(models)))
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            parser.error("unknown method {!r}; known: {}".format(m, ", ".join(METHODS)))
    if args.baseline_src:
        if args.in_process:
            parser.error("--baseline-src needs a process per method; drop --in-process")
        if not os.path.isdir(os.path.join(args.baseline_src, "tfloop")):
            parser.error(f"--baseline-src {args.baseline_src!r} has no tfloop package in it")
        methods += [m + BASELINE_SUFFIX for m in BASELINE_METHODS]
    return methods


def _run_repeats(common, methods, args, repeats):
    """Every run's result, the methods and models in a rotated order per repeat."""
    runs = []
    for r in range(repeats):
        order = methods[r % len(methods):] + methods[:r % len(methods)]
        models = args.models if r % 2 == 0 else args.models[::-1]
        for group in [order] if args.in_process else [[m] for m in order]:
            common.log("repeat {}/{}: {} on {}".format(r + 1, repeats, ", ".join(group),
                                                       ", ".join(models)))
            for result in spawn(group, models, args.quick, args.baseline_src, args.timeout):
                result["repeat"] = r
                runs.append(result)
                common.log("  {model}: {rate:.0f} steps/s, {cpu:.2f} CPU ms/step".format(
                    model=result["model"], rate=result["steps"] / result["wall_s"],
                    cpu=1e3 * result["cpu_s"] / result["steps"]))
    return runs


def main():
    parser = _parser()
    args = parser.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    sys.path.insert(0, HERE)
    if args.child:
        return child(args)
    import common
    methods = _methods(parser, args, common.MODELS)
    repeats = args.repeats or (1 if args.quick else 3)
    name = args.name or ("overhead_inprocess" if args.in_process else "overhead")
    info = report.machine_info()
    info.update(methods=methods, models=args.models, repeats=repeats, quick=args.quick,
                in_process=args.in_process,
                schedule=", ".join(_describe_schedule(common.MODELS[m], args.quick)
                                   for m in args.models))
    runs = _run_repeats(common, methods, args, repeats)
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(runs, methods, args.models)
    os.makedirs(args.out, exist_ok=True)
    report.write_json(os.path.join(args.out, name + ".json"),
                      {"info": info, "summary": rows, "runs": runs})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
