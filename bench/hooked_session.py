"""The per-step Python of ``HookedSession.run`` and of resolving callbacks' answers, against
another source tree's.

Usage::

    python bench/hooked_session.py --baseline-src /path/to/other/tfloop   # ~2 min

Both trees' ``tfutils/hooked_session.py`` and ``callbacks/run_args.py`` are loaded into one
process (the baseline's by path, with this tree's other modules) and run the same steps on one
session over a graph of constants and a ``NoOp``, so that the Python around the session call is
most of the time. The hooks are those of a training with the default callbacks: a few answering
a flat list of tensors (passed on as it is), one a dict of names (resolved at every step), one
nothing; the structures are fetched through the cached callable (``make_callable``, rebuilt by
tfloop). ``--structure named`` gives one hook a named tuple and an ``OrderedDict`` instead of the
dict. The two versions take turns in rounds of ``--steps`` steps; the ratio is the median over
rounds of this tree's round time over the baseline's round of the same turn (wall and process
CPU time). On a shared machine those swing; the number of Python function calls per step
(counted by ``cProfile`` over one extra round) does not.

Results go to ``bench/results/hooked_session.json`` and ``.md``.
"""
import argparse
import collections
import cProfile
import importlib.util
import os
import statistics
import sys
import time

import report

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
Pair = collections.namedtuple("Pair", ["first", "second"])


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Hook:
    """A callback's per-step part: ``answer`` resolved by ``run_args`` at every step."""

    def __init__(self, answer, run_args, graph):
        self.answer, self.run_args, self.graph = answer, run_args, graph
        self.results = None

    def before_run(self, ctx):
        return self.run_args.as_run_args(self.answer, self.graph, "Hook")

    def after_run(self, ctx, values):
        self.results = values.results


def build(tf, tfv1, structure):
    graph = tf.Graph()
    with graph.as_default():
        constants = [tf.constant(float(i), name=f"c{i}") for i in range(8)]
        step = tf.no_op(name="step")
    sess = tfv1.Session(graph=graph)
    graph.finalize()
    answers = [constants[0:2], [constants[2]], constants[3:5], None]
    if structure == "named":
        answers.append([Pair("c5", "c6"), collections.OrderedDict(c="c7")])
    else:
        answers.append({"a": "c5", "b": ["c6", "c7"]})
    return graph, sess, step, answers


def time_round(hooked, step, steps):
    """Wall and CPU seconds of ``steps`` runs."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        hooked.run(step)
    return time.perf_counter() - start, time.process_time() - cpu


def calls_per_step(hooked, step, steps):
    profile = cProfile.Profile()
    profile.enable()
    time_round(hooked, step, steps)
    profile.disable()
    profile.create_stats()
    return sum(stats[1] for stats in profile.stats.values()) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-src", required=True)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--structure", choices=["dict", "named"], default="dict")
    parser.add_argument("--name", default="hooked_session")
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    from tfloop.compat import tf, tfv1
    versions = {
        "this tree": (load(os.path.join(ROOT, "tfloop/tfutils/hooked_session.py"), "hs_new"),
                      load(os.path.join(ROOT, "tfloop/callbacks/run_args.py"), "ra_new")),
        "baseline": (load(os.path.join(args.baseline_src, "tfloop/tfutils/hooked_session.py"),
                          "hs_old"),
                     load(os.path.join(args.baseline_src, "tfloop/callbacks/run_args.py"),
                          "ra_old")),
    }
    info = report.machine_info()
    graph, sess, step, answers = build(tf, tfv1, args.structure)
    hooked = {}
    for name, (hooked_session, run_args) in versions.items():
        hooks = [Hook(answer, run_args, graph) for answer in answers]
        hooked[name] = hooked_session.HookedSession(sess, hooks)
        time_round(hooked[name], step, 100)      # the cached callable is made
    times = {name: [] for name in versions}
    for index in range(args.rounds):
        order = list(versions) if index % 2 == 0 else list(reversed(versions))
        for name in order:
            times[name].append(time_round(hooked[name], step, args.steps))
    info["loadavg_end"] = os.getloadavg()
    calls = {name: calls_per_step(hooked[name], step, 1000) for name in versions}
    ratios = {kind: [a[i] / b[i] for a, b in zip(times["this tree"], times["baseline"])]
              for i, kind in enumerate(("wall", "CPU"))}
    rows = [[name, f"{statistics.median(w for w, _ in t) / args.steps * 1e6:.1f}",
             f"{statistics.median(c for _, c in t) / args.steps * 1e6:.1f}",
             f"{calls[name]:.1f}"] for name, t in times.items()]
    summary = "; ".join(
        f"{kind} median {statistics.median(r):.3f} (quartiles "
        f"{statistics.quantiles(r, n=4)[0]:.3f}-{statistics.quantiles(r, n=4)[2]:.3f})"
        for kind, r in ratios.items())
    text = "\n".join([
        f"`HookedSession.run` with the default callbacks' hooks ({args.structure} structure), "
        f"{args.rounds} rounds of {args.steps} steps, the versions taking turns; ratio = median "
        f"over rounds of this tree's round time / the baseline's.", "",
        report.machine_line(info), "",
        report.table(["version", "wall µs/step (median)", "CPU µs/step (median)",
                      "Python calls/step"], rows), "",
        f"Ratio this tree / baseline: {summary}."])
    report.write_json(os.path.join(RESULTS, args.name + ".json"),
                      {"machine": info, "times": times, "ratios": ratios, "calls_per_step": calls,
                       "args": vars(args)})
    report.write_text(os.path.join(RESULTS, args.name + ".md"), text + "\n")
    print(text)


if __name__ == "__main__":
    main()
