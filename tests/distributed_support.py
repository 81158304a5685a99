"""One training script run in-process or as cluster tasks, for the multi-device and multi-worker
tests.

:func:`train_script` is what a user's script would be: the same model, data and callbacks under
any trainer. :func:`launch` runs it as real processes on 127.0.0.1 (one per task, ``TF_CONFIG`` set
in each). The processes are forked from a ``forkserver`` that imported TensorFlow once, so a
cluster starts in about a second instead of paying TensorFlow's import in every process.
"""
import faulthandler
import fcntl
import json
import multiprocessing
import os
import random
import socket
import sys
import tempfile
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from support import scaled_timeout  # noqa: E402

import tfloop  # noqa: E402
from tfloop.compat import tf, tfv1  # noqa: E402
from tfloop.train.cluster import shard_dataset  # noqa: E402
from tfloop.train.distributed import trainer_from_tf_config  # noqa: E402
from tfloop.utils import logger  # noqa: E402

# How long a task waits for another's answer (the server's operation timeout), and for the
# others to start.
CLUSTER_TIMEOUT_S = scaled_timeout(20)
STARTUP_TIMEOUT_S = scaled_timeout(10)
# How long a cluster may take in all before the launcher kills what is left.
CLUSTER_WAIT_S = scaled_timeout(20)
STEPS = 6
BATCH = 8           # the combined batch of one step, over every tower of every worker
N_IN, N_HIDDEN = 4, 8


def make_data(steps=STEPS, batch=BATCH):
    rng = np.random.RandomState(3)
    x = rng.randn(steps * batch, N_IN).astype(np.float32)
    y = np.sin(x.sum(axis=1)).astype(np.float32)
    return x, y


class MLP(tfloop.ModelDesc):
    """4 -> 8 (tanh) -> 1, squared error; random initial values, so replicas start different.

    ``optimizer``: ``"momentum"``, ``"adam"`` or ``"sgd"``, optionally with ``":<learning rate>"``
    (0.1 by default).
    """

    def __init__(self, optimizer="momentum"):
        self._optimizer = optimizer

    def inputs(self):
        return [tf.TensorSpec([None, N_IN], tf.float32, "x"),
                tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w1 = tfv1.get_variable("fc1/W", [N_IN, N_HIDDEN])
        b1 = tfv1.get_variable("fc1/b", [N_HIDDEN], initializer=tfv1.zeros_initializer())
        w2 = tfv1.get_variable("fc2/W", [N_HIDDEN, 1])
        hidden = tf.tanh(tf.matmul(x, w1) + b1)
        pred = tf.squeeze(tf.matmul(hidden, w2), 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        kind, _, lr = self._optimizer.partition(":")
        lr = float(lr or 0.1)
        if kind == "adam":
            return tfv1.train.AdamOptimizer(lr)
        if kind == "sgd":
            return tfv1.train.GradientDescentOptimizer(lr)
        return tfv1.train.MomentumOptimizer(lr, 0.9)


MODEL_VARIABLES = ["fc1/W", "fc1/b", "fc2/W"]


def initial_values():
    """Fixed starting values of :class:`MLP`, loaded with ``DictRestore`` (on the chief)."""
    rng = np.random.RandomState(5)
    return {"fc1/W": rng.randn(N_IN, N_HIDDEN).astype(np.float32) * 0.5,
            "fc1/b": rng.randn(N_HIDDEN).astype(np.float32) * 0.1,
            "fc2/W": rng.randn(N_HIDDEN, 1).astype(np.float32) * 0.5}


class CaptureVariables(tfloop.Callback):
    """Keep every variable's value (global and local) at the end of training; on a worker, also
    write them to ``<outdir>/<job><index>.npz``."""

    _chief_only = False

    def __init__(self, outdir=None, name="local"):
        self.outdir = outdir
        self.name = name
        self.values = None
        self.before = None

    def _setup_graph(self):
        self._variables = tfv1.global_variables() + tfv1.local_variables()

    def _fetch(self):
        values = self.trainer.sess.run(self._variables)
        return {v.op.name: np.asarray(value) for v, value in zip(self._variables, values)}

    def _before_train(self):
        self.before = self._fetch()

    def _after_train(self):
        if self.trainer.training_error is not None:
            return
        self.values = self._fetch()
        if self.outdir is not None:
            path = os.path.join(self.outdir, self.name + ".npz")
            np.savez(path + ".tmp.npz", **{k.replace("/", "|"): v for k, v in self.values.items()})
            os.replace(path + ".tmp.npz", path)


class DieAt(tfloop.Callback):
    """The process exits at once (no cleanup, like a crash) after global step ``step``."""

    _chief_only = False

    def __init__(self, step):
        self.step = step

    def _trigger_step(self):
        if self.global_step >= self.step:
            os._exit(17)


class FailAtSetup(tfloop.Callback):
    """Raises while the graph is built: a worker that fails before its first step."""

    _chief_only = False

    def _setup_graph(self):
        raise RuntimeError("a bug in the model")


def train_script(trainer, steps=STEPS, towers_per_step=1, optimizer="momentum", callbacks=(),
                 session_init="fixed", capture=None, save=True, max_epoch=1,
                 config_class=None, passes=False, **config_kwargs):
    """The user's script: train :class:`MLP` for ``steps`` steps, from :func:`initial_values`
    (``session_init="fixed"``), from random values (None), or from a given ``SessionInit``.

    Every step consumes ``BATCH`` datapoints in all: the dataset is batched by
    ``BATCH // towers_per_step``, where ``towers_per_step`` counts the towers of every worker,
    and each worker reads its shard (``shard_dataset``: the whole dataset without TF_CONFIG).
    With ``passes``, the data has no known length and is one tower's batch short, and each epoch
    is one pass (no ``steps_per_epoch``): the shards differ in length.
    """
    x, y = make_data(steps)
    per_tower = BATCH // towers_per_step

    def dataset():
        examples = tf.data.Dataset.from_tensor_slices((x, y))
        if passes:
            examples = examples.take(len(x) - per_tower).filter(lambda a, b: True)
        return shard_dataset(examples.batch(per_tower))

    capture = capture or CaptureVariables()
    all_callbacks = [capture] + list(callbacks) + ([tfloop.ModelSaver()] if save else [])
    config_class = config_class or tfloop.TrainConfig
    config = config_class(model=MLP(optimizer), data=tfloop.DatasetInput(dataset),
                                callbacks=all_callbacks, max_epoch=max_epoch,
                                steps_per_epoch=None if passes else steps,
                                session_init=tfloop.DictRestore(initial_values())
                                if session_init == "fixed" else session_init, **config_kwargs)
    tfloop.launch_train_with_config(config, trainer)
    return capture


# Lock files of the ports this process took, held until it exits.
_PORT_LOCKS = []


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def free_ports(n):
    """``n`` ports for cluster tasks, taken without a bind-and-close race: below the system's
    ephemeral range (so no outgoing connection or ``bind(0)`` gets them meanwhile), each held by
    a lock file until this process exits (so no other test process takes it), and free now."""
    lock_dir = os.path.join(tempfile.gettempdir(), "tfloop-test-ports")
    os.makedirs(lock_dir, exist_ok=True)
    low = _ephemeral_low()
    candidates = list(range(max(1024, low - 8000), low))
    random.Random().shuffle(candidates)
    ports = []
    for port in candidates:
        lock = open(os.path.join(lock_dir, str(port)), "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            continue
        if not _bindable(port):
            lock.close()
            continue
        _PORT_LOCKS.append(lock)
        ports.append(port)
        if len(ports) == n:
            return ports
    raise RuntimeError(f"No {n} free ports below {low}.")


def make_cluster(workers, ps=0):
    ports = iter(free_ports(workers + ps))
    cluster = {"worker": [f"127.0.0.1:{next(ports)}" for _ in range(workers)]}
    if ps:
        cluster["ps"] = [f"127.0.0.1:{next(ports)}" for _ in range(ps)]
    return cluster


def _task_main(tf_config, outdir, options):
    """A cluster task: the same script, with the trainer built from TF_CONFIG."""
    task = tf_config["task"]
    name = "{}{}".format(task["type"], task["index"])
    log = open(os.path.join(outdir, name + ".log"), "w", buffering=1)
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    # A hung task shows where it hangs (in its log), then exits.
    faulthandler.dump_traceback_later(options["watchdog_s"] - 2)
    watchdog = threading.Timer(options["watchdog_s"], lambda: os._exit(9))
    watchdog.daemon = True
    watchdog.start()
    os.environ["TF_CONFIG"] = json.dumps(tf_config)
    result = {"ok": False}
    start = time.monotonic()
    try:
        if task["index"] == 0 or not options.get("logdir_only_on_chief"):
            logger.set_logger_dir(os.path.join(outdir, "train_log"), action="keep")
        if "horovod_average" in options:
            trainer = tfloop.HorovodTrainer(
                average=options["horovod_average"],
                timeout_s=options.get("timeout_s", CLUSTER_TIMEOUT_S),
                startup_timeout_s=STARTUP_TIMEOUT_S)
        else:
            trainer = trainer_from_tf_config(gpus=options.get("gpus", 1),
                                             timeout_s=options.get("timeout_s", CLUSTER_TIMEOUT_S),
                                             startup_timeout_s=STARTUP_TIMEOUT_S)
        if trainer is not None:
            callbacks = []
            extra = {"session_config": tfv1.ConfigProto()} if options.get("session_config") else {}
            if options.get("die") == [task["type"], task["index"]]:
                callbacks.append(DieAt(options["die_at"]))
            if options.get("fail_at_setup"):
                callbacks.append(FailAtSetup())
            if options.get("mixed_precision"):
                extra["mixed_precision"] = options["mixed_precision"]
            if options.get("passes"):
                extra.update(passes=True, max_epoch=options["max_epoch"])
            if options.get("auto_resume"):
                extra.update(config_class=tfloop.AutoResumeTrainConfig,
                             max_epoch=options["max_epoch"])
            towers = options.get("gpus", 1) * sum(len(tf_config["cluster"].get(job, []))
                                                  for job in ("chief", "worker"))
            train_script(trainer, towers_per_step=towers, callbacks=callbacks,
                         capture=CaptureVariables(outdir, name),
                         optimizer=options.get("optimizer", "momentum"), **extra)
        result["ok"] = True
    except Exception as e:
        result.update(error_type=type(e).__name__, error=str(e))
        traceback.print_exc()
    result["seconds"] = time.monotonic() - start
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(result, f)
    log.flush()
    os._exit(0 if result["ok"] else 1)


_CONTEXT = None


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        _CONTEXT = multiprocessing.get_context("forkserver")
        # Modules importable from the server's default sys.path (Python 3.11's forkserver ignores
        # the parent's sys.path for its preloads).
        _CONTEXT.set_forkserver_preload(["tfloop", "tfloop.train.distributed"])
    return _CONTEXT


def launch(cluster, outdir, wait_s=CLUSTER_WAIT_S, **options):
    """Run every task of ``cluster`` as a process; wait for all (killing any left after
    ``wait_s`` seconds; each task exits by itself then, its stack in its log).

    Returns:
        dict: ``{"worker0": {"exitcode", "ok", "error_type", "error", "seconds", "npz"}, ...}``.
    """
    ctx = _context()
    options["watchdog_s"] = wait_s
    procs = {}
    for job, addresses in cluster.items():
        for index in range(len(addresses)):
            tf_config = {"cluster": cluster, "task": {"type": job, "index": index}}
            proc = ctx.Process(target=_task_main, args=(tf_config, outdir, options), daemon=True)
            proc.start()
            procs[f"{job}{index}"] = proc
    deadline = time.monotonic() + wait_s
    results = {}
    for name, proc in procs.items():
        proc.join(max(0.0, deadline - time.monotonic()))
        if proc.is_alive():
            proc.kill()
            proc.join()
            results[name] = {"exitcode": f"killed after {wait_s} s"}
            continue
        results[name] = {"exitcode": proc.exitcode}
        path = os.path.join(outdir, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                results[name].update(json.load(f))
        npz = os.path.join(outdir, name + ".npz")
        if os.path.exists(npz):
            with np.load(npz) as data:
                results[name]["values"] = {k.replace("|", "/"): data[k] for k in data.files}
    return results


def task_log(outdir, name):
    path = os.path.join(outdir, name + ".log")
    return open(path).read() if os.path.exists(path) else ""


def main(outdir):
    """``TF_CONFIG=... python distributed_support.py OUTDIR``: this task of the cluster, as a user's
    script would run it; a worker writes its variables to ``OUTDIR/worker<i>.npz``."""
    trainer = trainer_from_tf_config(gpus=1, timeout_s=CLUSTER_TIMEOUT_S,
                                     startup_timeout_s=STARTUP_TIMEOUT_S)
    if trainer is not None:
        train_script(trainer, towers_per_step=trainer.task.num_workers * trainer.num_towers,
                     capture=CaptureVariables(outdir, f"worker{trainer.task.task_index}"),
                     save=False)


if __name__ == "__main__":
    main(sys.argv[1])
