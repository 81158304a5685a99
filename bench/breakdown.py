"""Where a training step's time goes: TensorFlow kernels, the session call, tfloop's Python.

Usage::

    python bench/breakdown.py                 # the MLP
    python bench/breakdown.py --model tiny    # a model whose step is nearly all overhead

Three measurements in one process (CPU time of the process, per step):

1. Kernels: a few hundred steps of the raw graph traced with ``RunOptions.FULL_TRACE``; the sum
   of every op's execution time, by op type.
2. The cost of one session call on a graph that does nothing (a ``NoOp``): ``Session.run`` and a
   ``make_callable`` callable; this is what each step pays on top of its kernels.
3. tfloop with the default callbacks, its timed epochs under ``cProfile``: time inside
   TensorFlow's C++ session call vs the Python around it, and the Python functions that cost
   the most.

Results go to ``bench/results/profile_<model>.md`` and ``.json``.
"""
import argparse
import collections
import cProfile
import os
import pstats
import sys
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def kernel_time(spec, steps):
    import common
    tfv1 = common.tfv1
    sess, train_op, _ = common.raw_graph(spec, feed=False)
    for _ in range(50):
        sess.run(train_op)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        sess.run(train_op)
    untraced = ((time.perf_counter() - start) / steps, (time.process_time() - cpu) / steps)
    by_type = collections.Counter()
    options = tfv1.RunOptions(trace_level=tfv1.RunOptions.FULL_TRACE)
    for _ in range(steps):
        metadata = tfv1.RunMetadata()
        sess.run(train_op, options=options, run_metadata=metadata)
        for dev in metadata.step_stats.dev_stats:
            for node in dev.node_stats:
                op_type = node.timeline_label.split("(")[0].split(" = ")[-1].strip() or \
                    node.node_name
                by_type[op_type.split(" ")[0]] += node.op_end_rel_micros - node.op_start_rel_micros
    sess.close()
    return untraced, {k: v / steps for k, v in by_type.items()}


def call_cost(calls):
    import common
    tf, tfv1 = common.tf, common.tfv1
    graph = tf.Graph()
    with graph.as_default():
        noop = tf.no_op()
    sess = tfv1.Session(graph=graph)
    fn = sess.make_callable(noop)
    out = {}
    for name, call in (("Session.run(no_op)", lambda: sess.run(noop)), ("callable(no_op)", fn)):
        for _ in range(500):
            call()
        cpu = time.process_time()
        for _ in range(calls):
            call()
        out[name] = 1e6 * (time.process_time() - cpu) / calls
    sess.close()
    return out


def tfloop_profile(spec, steps_per_epoch):
    """cProfile of the timed epochs (the second and third) of tfloop with the defaults."""
    import common

    import tfloop
    profiler = cProfile.Profile()

    class Profile(tfloop.Callback):
        def _before_epoch(self):
            if self.epoch_num == 2:
                profiler.enable()

        def _after_train(self):
            profiler.disable()
    result = common.run_tfloop(spec, steps_per_epoch, 2, callbacks="default", extra=[Profile()])
    stats = pstats.Stats(profiler).stats
    steps = result["steps"]
    total = sum(v[2] for v in stats.values())
    in_tf = sum(v[2] for k, v in stats.items() if "TF_SessionRun_wrapper" in k[2])
    trigger = sum(v[3] for k, v in stats.items()
                  if k[2] == "trigger_step" and k[0].endswith("group.py"))
    top = sorted(((v[2], k) for k, v in stats.items() if "TF_SessionRun_wrapper" not in k[2]),
                 reverse=True)[:12]
    root = os.path.dirname(HERE)
    return {
        "steps": steps,
        "total_us_per_step": 1e6 * total / steps,
        "tf_session_call_us_per_step": 1e6 * in_tf / steps,
        "python_us_per_step": 1e6 * (total - in_tf) / steps,
        "trigger_step_us_per_step": 1e6 * trigger / steps,
        "top_python": [("{}:{}({})".format(os.path.relpath(k[0], root) if k[0].startswith(root)
                                          else k[0].split("site-packages/")[-1], k[1], k[2]),
                        1e6 * t / steps) for t, k in top],
    }


def markdown(data, info):
    wall, cpu = data["raw_step_s"]
    kernels = data["kernel_us_by_type"]
    kernel_total = sum(kernels.values())
    top_kernels = sorted(kernels.items(), key=lambda kv: -kv[1])[:8]
    prof = data["tfloop"]
    lines = [
        "# Where a step's time goes ({}, model {})".format(info["date"], info["model"]), "",
        report.machine_line(info), "",
        "## Raw step and its kernels", "",
        f"Raw `sess.run(train_op)`: {1e6 * wall:.0f} us wall, {1e6 * cpu:.0f} us CPU per step. "
        f"Sum of op execution times in a traced step: {kernel_total:.0f} us (ops run partly in "
        "parallel, so this can exceed the wall time).", "",
        report.table(["op type", "us per step"],
                     [[k, f"{v:.0f}"] for k, v in top_kernels]), "",
        "## One session call with nothing to do", "",
        report.table(["call", "CPU us"], [[k, f"{v:.0f}"]
                                          for k, v in data["call_us"].items()]), "",
        "## tfloop, default callbacks, under cProfile", "",
        "Over {} timed steps, per step: {:.0f} us in all, of which {:.0f} us inside TensorFlow's "
        "C++ session call (kernels, executor, tensor conversion) and {:.0f} us of Python (tfloop, "
        "TensorFlow's Python session code, callbacks, monitors); the callbacks' `trigger_step` "
        "{:.0f} us. cProfile slows Python calls down several times, so the Python share is an "
        "upper bound.".format(prof["steps"], prof["total_us_per_step"],
                              prof["tf_session_call_us_per_step"], prof["python_us_per_step"],
                              prof["trigger_step_us_per_step"]), "",
        report.table(["function (own time)", "us per step"],
                     [[k, f"{v:.1f}"] for k, v in prof["top_python"]]), ""]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="mlp", help="mlp (default), tiny or convnet")
    parser.add_argument("--steps", type=int, default=300, help="traced steps (default 300)")
    parser.add_argument("--out", default=RESULTS, help="results directory")
    args = parser.parse_args()
    sys.path.insert(0, HERE)
    import common
    spec = common.MODELS[args.model]
    info = report.machine_info()
    info["model"] = args.model
    raw_step, kernels = kernel_time(spec, args.steps)
    data = {"raw_step_s": raw_step, "kernel_us_by_type": kernels,
            "call_us": call_cost(5000),
            "tfloop": tfloop_profile(spec, spec.steps_per_epoch)}
    info["loadavg_end"] = os.getloadavg()
    os.makedirs(args.out, exist_ok=True)
    name = "profile_" + args.model
    report.write_json(os.path.join(args.out, name + ".json"), {"info": info, "data": data})
    text = markdown(data, info)
    report.write_text(os.path.join(args.out, name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
