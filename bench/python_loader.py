"""Training from a Python loader: tfloop's default input for a Python iterable against plain loops.

The loader spends about 1 ms of pure-Python work (holding the GIL) per batch, then yields a
batch of the MLP 784-256-10 (batch 64). Every method trains the same graph on the same batches:

* ``tfloop_default``: ``TrainConfig(data=loader)`` (a Python iterable becomes a
  :class:`~tfloop.QueueInput`: a loader thread enqueues into a ``FIFOQueue``, the step dequeues
  in the graph), ``SimpleTrainer``, no callbacks or monitors;
* ``tfloop_default_cb``: the same with tfloop's default callbacks and monitors;
* ``tfloop_feed``: ``FeedInput(loader)`` (the loader runs in the training thread), no callbacks;
* ``tfloop_buffer``: ``QueueInput(loader, queue=50)``: the loader thread fills a Python buffer
  and each step feeds from it (QueueInput's other mode);
* ``(a) raw_feed_sync``: a raw session loop, ``next(loader)`` then
  ``sess.run(train_op, feed_dict)``;
* ``(b) raw_prefetch``: a raw loop fed by ``feed_dict`` from a ``queue.Queue(50)`` that a thread
  fills from the loader;
* ``(c) raw_from_generator``: ``tf.data.Dataset.from_generator(loader).prefetch(AUTOTUNE)`` in
  the graph, ``sess.run(train_op)``;
* ``loader``: the loader alone, ``next(loader)`` without training: the speed no input can beat
  when the step is shorter than the loader.

Usage::

    TF_ENABLE_ONEDNN_OPTS=1 python bench/python_loader.py --rounds 15 --bursts 300 --warmup 100
    python bench/python_loader.py        # 5 rounds of separate runs (~4 min)

The first (turns, ~4 min) is the case the benchmark is for when the machine is quiet: with oneDNN
on, the MLP's step is shorter than the loader's 1 ms.

All methods run in one process, in rounds: each round runs every method once, in an order that
rotates from round to round, so that load changes of a shared machine spread over all of them.
With ``--bursts`` the methods run in threads and take turns (one burst each per round, the
others paused), so that the bursts compared are seconds apart: use it on a shared machine.
The table gives the median time per step over the rounds and the medians of per-round ratios: each
method's time over (b)'s, the thread feeding ``session.run`` (the reference), and over the
loader's alone. Results go to ``bench/results/<name>.json`` and ``.md``.
"""
import argparse
import os
import queue
import statistics
import tempfile
import threading
import time

import common
import report
from common import BATCH, Window, log, tf, tfv1

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
SPEC = common.MODELS["mlp"]
WORK_S = 0.001
REFERENCE = "raw_prefetch"
LOADER = "loader"
METHODS = {
    "tfloop_default": "tfloop, TrainConfig(data=loader) (QueueInput: the loader thread enqueues "
                      "into a FIFOQueue of 50 with a session callable of its own, the step "
                      "dequeues in the graph), SimpleTrainer, no callbacks",
    "tfloop_default_cb": "tfloop_default with the default callbacks and monitors",
    "tfloop_feed": "tfloop, FeedInput(loader): the loader runs in the training thread",
    "tfloop_buffer": "tfloop, QueueInput(loader, queue=50): the loader thread fills a Python "
                     "buffer, each step feeds from it (QueueInput's other mode)",
    "raw_feed_sync": "(a) raw loop: next(loader), sess.run(train_op, feed_dict)",
    "raw_prefetch": "(b) raw loop: a thread fills queue.Queue(50) from the loader; "
                    "sess.run(train_op, feed_dict)",
    "raw_from_generator": "(c) raw loop: Dataset.from_generator(loader).prefetch(AUTOTUNE) in the "
                          "graph; sess.run(train_op)",
    "loader": "the loader alone: next(loader), no training",
}


def python_work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def calibrate(seconds=WORK_S):
    """How many iterations of :func:`python_work` take ``seconds`` of this thread's CPU time
    (the fastest of a few tries, so that a loaded machine does not shrink the work)."""
    n = 2000
    while True:
        start = time.thread_time()
        python_work(n)
        if time.thread_time() - start > 0.02:
            break
        n *= 2
    rates = []
    for _ in range(7):
        start = time.thread_time()
        python_work(n)
        rates.append(n / max(time.thread_time() - start, 1e-9))
    return int(max(rates) * seconds)


class Loader:
    """A re-iterable of batches that does ``work`` iterations of Python work per batch."""

    def __init__(self, work):
        self.work = work
        self.batches = common.feed_batches(SPEC)

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        for batch in self.batches:
            python_work(self.work)
            yield batch


# Graphs are built one at a time (tfloop's tower context is per process, not per thread).
BUILD_LOCK = threading.Lock()


class Gate:
    """Lets a method run only in its turns (bursts of steps); its loader waits between turns."""

    def __init__(self):
        self.active = threading.Event()
        self.finished = threading.Event()
        self.stopping = False
        self.times = []

    def wait_turn(self):
        self.active.wait()

    def end_turn(self, wall, cpu, steps):
        self.times.append((wall / steps, cpu / steps))
        self.active.clear()
        self.finished.set()


class GatedLoader(Loader):
    """:class:`Loader` that makes each batch only during its method's turn."""

    def __init__(self, work, gate):
        super().__init__(work)
        self.gate = gate

    def __iter__(self):
        for batch in self.batches:
            self.gate.active.wait()
            if self.gate.stopping:
                return
            python_work(self.work)
            yield batch


def forever(loader):
    gate = getattr(loader, "gate", None)
    while gate is None or not gate.stopping:
        yield from loader


# ---- raw loops ---------------------------------------------------------------------------------
def raw_graph(loader, from_generator):
    graph = tf.Graph()
    with graph.as_default():
        if from_generator:
            signature = (tf.TensorSpec([None, *SPEC.input_shape], tf.float32),
                         tf.TensorSpec([None], tf.int32))
            ds = tf.data.Dataset.from_generator(lambda: forever(loader),
                                                output_signature=signature)
            iterator = tfv1.data.make_initializable_iterator(ds.prefetch(tf.data.AUTOTUNE))
            x, y = iterator.get_next()
        else:
            iterator = None
            x = tfv1.placeholder(tf.float32, [None, *SPEC.input_shape], name="input")
            y = tfv1.placeholder(tf.int32, [None], name="label")
        cost = SPEC.build_cost(x, y)
        train_op = common.learning_rate_optimizer().minimize(
            cost, global_step=tfv1.train.get_or_create_global_step())
        sess = tfv1.Session(graph=graph)
        sess.run(tfv1.global_variables_initializer())
        if iterator is not None:
            sess.run(iterator.initializer)
        graph.finalize()
    return sess, train_op, x, y


def run_raw(method, loader, warmup, steps):
    sess, _, step, stop, thread = raw_loop(method, loader)
    window = Window()
    for i in range(warmup + steps):
        if i == warmup:
            window.open()
        step()
    window.close()
    stop.set()
    if thread is not None:
        thread.join()
    if sess is not None:
        sess.close()
    return window.result(steps)


def _prefetch(loader, prefetched, stop):
    """Put the loader's batches into the queue ``prefetched`` until ``stop`` is set."""
    for batch in forever(loader):
        while not stop.is_set():
            try:
                prefetched.put(batch, timeout=0.1)
                break
            except queue.Full:
                pass
        if stop.is_set():
            return


def raw_loop(method, loader):
    """``(sess, train_op, step, stop, thread)``: one step of the raw loop ``method``."""
    stop = threading.Event()
    thread = None
    if method == LOADER:
        batches = forever(loader)
        return None, None, lambda: next(batches), stop, thread
    sess, train_op, x, y = raw_graph(loader, method == "raw_from_generator")
    if method == "raw_feed_sync":
        batches = forever(loader)

        def step():
            bx, by = next(batches)
            sess.run(train_op, feed_dict={x: bx, y: by})
    elif method == "raw_prefetch":
        prefetched = queue.Queue(50)
        thread = threading.Thread(target=_prefetch, args=(loader, prefetched, stop), daemon=True)
        thread.start()

        def step():
            bx, by = prefetched.get()
            sess.run(train_op, feed_dict={x: bx, y: by})
    else:
        def step():
            sess.run(train_op)
    return sess, train_op, step, stop, thread


def raw_bursts(method, gate, work, bursts, burst_steps, skip):
    with BUILD_LOCK:
        sess, _, step, stop, _ = raw_loop(method, GatedLoader(work, gate))
    for _ in range(bursts):
        gate.wait_turn()
        for i in range(burst_steps):
            if i == skip:
                start, cpu = time.perf_counter(), time.process_time()
            step()
        gate.end_turn(time.perf_counter() - start, time.process_time() - cpu, burst_steps - skip)
    stop.set()
    if sess is not None:
        sess.close()


# ---- tfloop ------------------------------------------------------------------------------------
def run_tfloop(method, loader, warmup, steps):
    import tfloop
    from tfloop.utils import logger
    if steps % warmup:
        raise ValueError(f"--steps ({steps}) must be a multiple of --warmup ({warmup}).")
    window = Window()
    opener, closer = common.timing_callbacks(window)
    data = tfloop_data(method, loader)
    kwargs = {}
    if method == "tfloop_default_cb":
        logger.set_logger_dir(os.path.join(tempfile.mkdtemp(prefix="tfloop-bench-"), "log"),
                              action="keep")
    else:
        kwargs = {"extra_callbacks": [], "monitors": []}
    config = tfloop.TrainConfig(model=common.tfloop_model(SPEC), data=data,
                                callbacks=[opener, closer], steps_per_epoch=warmup,
                                max_epoch=1 + steps // warmup, **kwargs)
    try:
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    return window.result(steps)


def tfloop_data(method, loader):
    import tfloop
    if method == "tfloop_feed":
        return tfloop.FeedInput(loader)
    if method == "tfloop_buffer":
        return tfloop.QueueInput(loader, queue=50)
    return loader


def tfloop_bursts(method, gate, work, bursts, burst_steps, skip):
    """One epoch of ``burst_steps`` steps per turn; the steps after ``skip`` are timed."""
    import tfloop
    built = threading.Event()

    class Turns(tfloop.Callback):
        _chief_only = False

        def _before_train(self):
            built.set()
            BUILD_LOCK.release()

        def _before_epoch(self):
            gate.wait_turn()

        def _trigger_step(self):
            if self.local_step == skip - 1:
                self.start, self.cpu = time.perf_counter(), time.process_time()

        def _after_epoch(self):
            if self.epoch_num == bursts:
                gate.stopping = True
            gate.end_turn(time.perf_counter() - self.start, time.process_time() - self.cpu,
                          burst_steps - skip)
            if gate.stopping:
                gate.active.set()

    kwargs = {"extra_callbacks": [], "monitors": []}
    if method == "tfloop_default_cb":
        kwargs = {}
    config = tfloop.TrainConfig(model=common.tfloop_model(SPEC),
                                data=tfloop_data(method, GatedLoader(work, gate)),
                                callbacks=[Turns()], steps_per_epoch=burst_steps,
                                max_epoch=bursts, **kwargs)
    BUILD_LOCK.acquire()
    try:
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        if not built.is_set():
            BUILD_LOCK.release()


def run_bursts(methods, work, rounds, burst_steps, skip):
    """Every method in a thread of its own; they take turns, one burst each per round (in an
    order that rotates), so that the bursts compared are seconds apart. The first round warms up
    and is left out. Returns ``{method: [(wall s/step, cpu s/step) per round]}``."""
    gates = {m: Gate() for m in methods}
    threads = []
    for m in methods:
        target = tfloop_bursts if m.startswith("tfloop") else raw_bursts
        thread = threading.Thread(target=target, args=(m, gates[m], work, rounds + 1, burst_steps,
                                                       skip), name=m, daemon=True)
        thread.start()
        threads.append(thread)
    for r in range(rounds + 1):
        for m in methods[r % len(methods):] + methods[:r % len(methods)]:
            gate = gates[m]
            gate.finished.clear()
            gate.active.set()
            if not gate.finished.wait(600):
                raise RuntimeError(f"{m} did not finish its burst of round {r} in 600 s.")
            log(f"round {r}/{rounds} {m}: {1e3 * gate.times[-1][0]:.3f} ms/step")
    for gate in gates.values():
        gate.stopping = True
        gate.active.set()
    for thread in threads:
        thread.join(60)
    return {m: gates[m].times[1:] for m in methods}


def run_method(method, loader, warmup, steps):
    if method.startswith("tfloop"):
        return run_tfloop(method, loader, warmup, steps)
    return run_raw(method, loader, warmup, steps)


# ---- report ------------------------------------------------------------------------------------
def round_ratios(runs, reference):
    """``{method: [time / reference's time, one per round in which both ran]}``: bursts of one
    round are seconds apart, so a ratio is less exposed to a shared machine's load than medians
    taken minutes apart."""
    ratios = {}
    for r in sorted({run["round"] for run in runs}):
        mine = {run["method"]: run["wall_s"] / run["steps"] for run in runs if run["round"] == r}
        if reference in mine:
            for m, t in mine.items():
                ratios.setdefault(m, []).append(t / mine[reference])
    return ratios


def summarize(runs, methods):
    to_reference, to_loader = round_ratios(runs, REFERENCE), round_ratios(runs, LOADER)
    rows = []
    for m in methods:
        mine = [r for r in runs if r["method"] == m]
        times = [1e3 * r["wall_s"] / r["steps"] for r in mine]
        rows.append({"method": m, "rounds": len(mine),
                     "ms_per_step_median": statistics.median(times),
                     "ms_per_step_min": min(times), "ms_per_step_max": max(times),
                     "cpu_ms_per_step": statistics.median(1e3 * r["cpu_s"] / r["steps"]
                                                          for r in mine),
                     "ratio_to_reference": _median(to_reference.get(m)),
                     "ratio_to_loader": _median(to_loader.get(m))})
    return rows


def _median(values):
    return statistics.median(values) if values else None


def _ratio(value):
    return "-" if value is None else f"{value:.3f}"


def markdown(rows, info):
    headers = ["method", "ms/step (median)", "min-max", "CPU ms/step",
               f"median of per-round time / `{REFERENCE}`'s (the feeding thread)",
               f"median of per-round time / `{LOADER}`'s (the loader alone)"]
    lines = [[r["method"], f"{r['ms_per_step_median']:.3f}",
              f"{r['ms_per_step_min']:.3f}-{r['ms_per_step_max']:.3f}",
              f"{r['cpu_ms_per_step']:.2f}", _ratio(r["ratio_to_reference"]),
              _ratio(r["ratio_to_loader"])]
             for r in rows]
    return "\n".join([
        f"# Python loader ({info['date']})",
        "",
        report.machine_line(info),
        f"MLP 784-256-10, batch {BATCH}; the loader does {info['work_ms']:.2f} ms of Python work "
        f"per batch (thread CPU time, measured alone); TF_ENABLE_ONEDNN_OPTS="
        f"{info.get('onednn_opts')}; {info['rounds']} interleaved rounds in one "
        + (f"process, each method {info['warmup']} warm-up + {info['steps']} timed steps per round."
           if not info.get("bursts") else
           f"process; methods take turns in threads, one burst of {info['bursts']} steps each per "
           f"round (the last {info['bursts'] - info['warmup']} timed, the others paused), after a "
           f"warm-up round."),
        "",
        report.table(headers, lines),
        "",
    ] + [f"- `{m}`: {METHODS[m]}" for m in info["methods"]]) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=100, help="warm-up steps per run")
    parser.add_argument("--steps", type=int, default=500,
                        help="timed steps per run (a multiple of --warmup)")
    parser.add_argument("--bursts", type=int, default=0,
                        help="take turns instead: every method trains in a thread of its own, "
                             "one burst of this many steps per round (the first --warmup of "
                             "each burst untimed), the others paused; an extra first round warms "
                             "up")
    parser.add_argument("--name", default="python_loader", help="results file name")
    parser.add_argument("--out", default=RESULTS)
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            parser.error(f"unknown method {m!r}; known: {', '.join(METHODS)}")
    work = calibrate()
    loader = Loader(work)
    cpu = []
    for _ in range(20):
        start = time.thread_time()
        python_work(work)
        cpu.append(time.thread_time() - start)
    info = report.machine_info()
    info.update(methods=methods, rounds=args.rounds, warmup=args.warmup, steps=args.steps,
                bursts=args.bursts, work_iterations=work, work_ms=1e3 * statistics.median(cpu),
                onednn_opts=os.environ.get("TF_ENABLE_ONEDNN_OPTS"))
    if args.bursts and args.bursts <= args.warmup:
        parser.error("--bursts must be larger than --warmup (the untimed steps of each burst)")
    runs = []
    if args.bursts:
        timed = args.bursts - args.warmup
        for method, times in run_bursts(methods, work, args.rounds, args.bursts,
                                        args.warmup).items():
            runs += [{"method": method, "round": r, "steps": timed, "wall_s": wall * timed,
                      "cpu_s": cpu * timed} for r, (wall, cpu) in enumerate(times)]
    for r in range(0 if args.bursts else args.rounds):
        order = methods[r % len(methods):] + methods[:r % len(methods)]
        for method in order:
            result = run_method(method, loader, args.warmup, args.steps)
            result.update(method=method, round=r)
            runs.append(result)
            log(f"round {r + 1}/{args.rounds} {method}: "
                f"{1e3 * result['wall_s'] / result['steps']:.3f} ms/step")
    info["loadavg_end"] = os.getloadavg()
    rows = summarize(runs, methods)
    report.write_json(os.path.join(args.out, args.name + ".json"),
                      {"info": info, "summary": rows, "runs": runs})
    text = markdown(rows, info)
    report.write_text(os.path.join(args.out, args.name + ".md"), text)
    print(text)


if __name__ == "__main__":
    main()
