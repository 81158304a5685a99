"""Clusters of TensorFlow servers: ``TF_CONFIG``, servers with the right config, the ps loop.

A cluster has ``worker`` tasks (worker 0 is the chief) and, for parameter-server training, ``ps``
tasks. Every process runs one ``tf.distribute.Server``; :func:`create_server` gives it the config
that multi-worker training needs on TensorFlow 2.x:

* ``experimental.collective_group_leader`` = worker 0: without it, collective ops across
  processes wait forever;
* ``operation_timeout_in_ms``: a step that waits on a dead or hung task fails with
  ``DeadlineExceededError`` after that long, instead of hanging;
* ``device_count={'CPU': n}``: n logical CPU devices, for towers on a machine without GPUs.

It also sets the environment variable ``GRPC_FAIL_FAST=true`` (unless set): TensorFlow's RPCs
then fail at once when a task is gone, instead of waiting for it to come back.
"""
import errno
import json
import os
import re
import socket
import time

from tfloop.compat import tf, tfv1
from tfloop.utils import logger
from tfloop.utils.checks import check_number, check_positive_int, is_int

__all__ = ["ClusterError", "ClusterTask", "create_server", "session_config_for", "wait_for_tasks",
           "shard_dataset", "run_parameter_server", "DEFAULT_TIMEOUT_S",
           "DEFAULT_STARTUP_TIMEOUT_S", "CLUSTER_ERRORS", "describe_cluster_error"]

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_STARTUP_TIMEOUT_S = 300.0
_JOBS = ("worker", "ps")
_DONE_QUEUE = "tfloop_done"
CLUSTER_ERRORS = (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
                  tf.errors.AbortedError, tf.errors.CancelledError)


def describe_cluster_error(error):
    """The informative part of a TensorFlow runtime error: its first real line, and the peer."""
    message = getattr(error, "message", None) or str(error)
    lines = [line.strip() for line in message.splitlines()]
    lines = [line for line in lines if line and "From /job:" not in line and not line.startswith(
        ("=", "Additional GRPC", ":UNKNOWN", "[[", "Recent warning", "The error could be"))]
    text = lines[0] if lines else type(error).__name__
    peer = re.search(r"remote target (/job:\S+?/task:\d+)", message)
    return text + (f" (from {peer.group(1)})" if peer else "")


class ClusterError(RuntimeError):
    """Another task of the cluster failed, died, or never came up.

    Example:
        >>> try:
        ...     launch_train_with_config(config, trainer)
        ... except ClusterError as e:
        ...     print("the cluster failed:", e)        # e.g. a worker died; restart the job
    """


class ClusterTask:
    """This process's place in a cluster: the cluster, its job and its index.

    Args:
        cluster (tf.train.ClusterSpec or dict): the cluster, ``{"worker": [...], "ps": [...]}``.
        job_name (str): ``"worker"`` or ``"ps"``.
        task_index (int): the index in that job.

    Example:
        >>> task = ClusterTask.from_tf_config()      # from the TF_CONFIG environment variable
        >>> task.is_chief, task.num_workers, task.device()
        (True, 2, '/job:worker/task:0')
    """

    def __init__(self, cluster, job_name, task_index):
        if isinstance(cluster, dict):
            cluster = _cluster_from_dict(cluster)
        if not isinstance(cluster, tf.train.ClusterSpec):
            raise TypeError("cluster must be a tf.train.ClusterSpec or a dict of job -> addresses, "
                            f"got {cluster!r}.")
        jobs = cluster.jobs
        unsupported = sorted(set(jobs) - set(_JOBS))
        if unsupported:
            raise ValueError(f"The cluster has job(s) {unsupported}; tfloop supports 'worker' "
                             "(worker 0 is the chief) and 'ps'. List a 'chief' task as worker 0 "
                             "(ClusterTask.from_tf_config does that for TF_CONFIG).")
        if "worker" not in jobs:
            raise ValueError(f"The cluster has no 'worker' job: {cluster.as_dict()}.")
        if job_name not in jobs:
            raise ValueError(f"Task type {job_name!r} is not a job of the cluster (jobs: "
                             f"{', '.join(jobs)}).")
        task_index = _task_index(task_index)
        if not 0 <= task_index < cluster.num_tasks(job_name):
            raise ValueError(f"Task index {task_index!r} is out of range: job {job_name!r} has "
                             f"{cluster.num_tasks(job_name)} task(s).")
        self.cluster = cluster
        self.job_name = job_name
        self.task_index = task_index

    @classmethod
    def from_tf_config(cls, tf_config=None):
        """Parse ``TF_CONFIG`` (a JSON string or dict; the environment variable by default)."""
        if tf_config is None:
            tf_config = os.environ.get("TF_CONFIG")
            if not tf_config:
                raise ValueError("TF_CONFIG is not set: set it to "
                                 '{"cluster": {"worker": ["host:port", ...]}, '
                                 '"task": {"type": "worker", "index": 0}}.')
        if isinstance(tf_config, str):
            try:
                tf_config = json.loads(tf_config)
            except ValueError as e:
                raise ValueError(f"TF_CONFIG is not valid JSON ({e}): {tf_config!r}.") \
                    from None
        if not isinstance(tf_config, dict) or not isinstance(tf_config.get("cluster"), dict) or \
                not isinstance(tf_config.get("task"), dict):
            raise ValueError("TF_CONFIG must have a 'cluster' dict and a 'task' dict, got "
                             f"{tf_config!r}.")
        task = tf_config["task"]
        if "type" not in task or "index" not in task:
            raise ValueError(f"TF_CONFIG's task needs 'type' and 'index', got {task!r}.")
        if task["type"] == "evaluator":
            raise ValueError(
                "TF_CONFIG makes this process an 'evaluator' task, which tfloop does not run: "
                "in its place, run a script that evaluates the chief's checkpoints as they "
                "appear: `for checkpoint in tf.train.checkpoints_iterator(LOGDIR): "
                "OfflinePredictor(PredictConfig(model=MyModel(), session_init=checkpoint, "
                "input_names=[...], output_names=[...]))` on your validation data (a runnable "
                "script: docs/distributed.md, 'An evaluator replica'); or evaluate during "
                "training on the chief (InferenceRunner, or DataParallelInferenceRunner over its "
                "devices) and remove the evaluator replica.")
        cluster, job_name, task_index = _chief_as_worker_0(tf_config["cluster"], task["type"],
                                                           task["index"])
        return cls(cluster, job_name, task_index)

    @classmethod
    def from_server(cls, server):
        """The task of a running ``tf.distribute.Server``."""
        if not isinstance(server, tf.distribute.Server):
            raise TypeError(f"server must be a tf.distribute.Server, got {server!r}.")
        server_def = server.server_def
        return cls(tf.train.ClusterSpec(server_def.cluster), server_def.job_name,
                   server_def.task_index)

    @property
    def is_chief(self):
        return self.job_name == "worker" and self.task_index == 0

    @property
    def num_workers(self):
        return self.cluster.num_tasks("worker")

    @property
    def num_ps(self):
        return self.cluster.num_tasks("ps") if "ps" in self.cluster.jobs else 0

    def device(self, job_name=None, task_index=None):
        """The device prefix of a task, ``/job:<job>/task:<index>`` (this task by default)."""
        job_name = self.job_name if job_name is None else job_name
        task_index = self.task_index if task_index is None else task_index
        return f"/job:{job_name}/task:{task_index}"

    def address(self, job_name, task_index):
        return self.cluster.task_address(job_name, task_index)

    def shard(self, dataset):
        """This worker's shard of ``dataset``: every ``num_workers``-th element from its index."""
        if self.job_name != "worker":
            raise ValueError(f"Only workers read data; this task is {self.device()}.")
        return dataset.shard(self.num_workers, self.task_index)

    def __repr__(self):
        return f"ClusterTask({self.device()}, workers={self.num_workers}, ps={self.num_ps})"


def _task_index(value):
    """The task index as an int: TF_CONFIG written by hand or by a launcher often holds it as a
    string (``"index": "0"``), which TensorFlow's own parser takes too."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    if not is_int(value):
        raise ValueError(f"Task index must be an int (TF_CONFIG's task 'index', e.g. 0), got "
                         f"{value!r} ({type(value).__name__}).")
    return int(value)


def _port_in_use(address):
    """Whether the port of ``host:port`` cannot be bound now (another process holds it): the
    server binds it on every interface."""
    port = address.rpartition(":")[2]
    try:
        with socket.socket() as s:
            s.bind(("", int(port)))
    except OSError as e:
        return e.errno == errno.EADDRINUSE
    except ValueError:
        return False
    return False


def _chief_as_worker_0(cluster, job_name, task_index):
    """The Estimator and Kubeflow layout (a ``chief`` job beside the ``worker`` job, and an
    ``evaluator`` outside the training) as tfloop's: the chief is worker 0, worker i is worker
    i + 1. Every task maps the same ``TF_CONFIG`` the same way, so their servers agree."""
    cluster = {job: addresses for job, addresses in cluster.items() if job != "evaluator"}
    if "chief" not in cluster:
        return cluster, job_name, task_index
    chief = cluster.pop("chief")
    if not isinstance(chief, (list, tuple)) or len(chief) != 1:
        raise ValueError(f"TF_CONFIG's 'chief' job must list one address, got {chief!r}.")
    workers = cluster.get("worker", [])
    if not isinstance(workers, (list, tuple)):
        raise ValueError(f"TF_CONFIG's 'worker' job must list 'host:port' addresses, got "
                         f"{workers!r}.")
    cluster["worker"] = list(chief) + list(workers)
    if job_name == "chief":
        return cluster, "worker", _task_index(task_index)
    if job_name == "worker":
        return cluster, "worker", _task_index(task_index) + 1
    return cluster, job_name, task_index


def _cluster_from_dict(cluster):
    for job, addresses in cluster.items():
        if not isinstance(addresses, (list, tuple)) or not addresses or \
                not all(isinstance(a, str) and ":" in a for a in addresses):
            raise ValueError(f"Job {job!r} of the cluster must list 'host:port' addresses, got "
                             f"{addresses!r}.")
    return tf.train.ClusterSpec({job: list(addresses) for job, addresses in cluster.items()})


def create_server(task, num_cpu_devices=None, timeout_s=DEFAULT_TIMEOUT_S, start=True):
    """Start this task's ``tf.distribute.Server`` with the config multi-worker training needs.

    Args:
        task (ClusterTask): this process's task (e.g. ``ClusterTask.from_tf_config()``).
        num_cpu_devices (int): logical CPU devices of the server (for CPU towers); default 1.
        timeout_s (float): sessions on this server (the trainers' sessions copy this config) fail a
            step that waits longer than this on another task; 0 waits forever.
        start (bool): start the server now.

    Example:
        >>> server = create_server(ClusterTask.from_tf_config(), num_cpu_devices=2, timeout_s=60)
    """
    if not isinstance(task, ClusterTask):
        raise TypeError("create_server needs a ClusterTask (ClusterTask.from_tf_config()), got "
                        f"{task!r}.")
    check_number(timeout_s, "timeout_s", at_least=0)
    config = tfv1.ConfigProto(allow_soft_placement=True)
    config.gpu_options.allow_growth = True
    if num_cpu_devices is not None:
        config.device_count["CPU"] = check_positive_int(num_cpu_devices, "num_cpu_devices")
    config.operation_timeout_in_ms = int(timeout_s * 1000)
    config.experimental.collective_group_leader = "/job:worker/replica:0/task:0"
    # Without it, closing a session whose tasks include a dead one waits for that task forever.
    os.environ.setdefault("GRPC_FAIL_FAST", "true")
    try:
        return tf.distribute.Server(task.cluster, job_name=task.job_name,
                                    task_index=task.task_index, config=config, start=start)
    except tf.errors.OpError as e:
        address = task.address(task.job_name, task.task_index)
        if not _port_in_use(address):
            raise
        raise ClusterError(
            f"{task.device()}: cannot start its server at {address}: port "
            f"{address.rpartition(':')[2]} is in use (another process, or a task of an earlier "
            "run still running?). Stop that process or give this task another port in the "
            "cluster spec.") from e


def session_config_for(server, device_filters):
    """A session config for ``server``: the server's own config plus ``device_filters`` (the tasks
    the session may use; other tasks need not be up)."""
    config = tfv1.ConfigProto()
    config.CopyFrom(server.server_def.default_session_config)
    config.device_filters.extend(device_filters)
    return config


def wait_for_tasks(task, tasks, timeout_s):
    """Wait until every ``(job, index)`` of ``tasks`` accepts connections.

    Creating a session that uses a task that is not up blocks without any time limit, so the
    trainers check the tasks they need first.

    Raises:
        ClusterError: a task is still unreachable after ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    for job, index in tasks:
        address = task.address(job, index)
        while not _reachable(address):
            if time.monotonic() > deadline:
                raise ClusterError(f"{task.device()}: {task.device(job, index)} at {address} is "
                                   f"not reachable after {timeout_s:.0f} s: is it running, and is "
                                   "the cluster spec right?")
            time.sleep(0.05)


def _reachable(address):
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=1.0).close()
        return True
    except OSError:
        return False


def shard_dataset(dataset, task=None):
    """This worker's shard of ``dataset`` (``dataset.shard(num_workers, worker_index)``).

    Shard a batched dataset: then at step s the workers together train on exactly the batches a
    single process would take at step s with a batch ``num_workers`` times larger.

    Args:
        dataset (tf.data.Dataset): the full dataset, the same on every worker.
        task (ClusterTask): this worker; from ``TF_CONFIG`` by default; without ``TF_CONFIG`` the
            dataset is returned as is (one process).

    Example:
        >>> DatasetInput(lambda: shard_dataset(make_dataset().batch(32)))
    """
    if task is None:
        if not os.environ.get("TF_CONFIG"):
            return dataset
        task = ClusterTask.from_tf_config()
    return task.shard(dataset)


def done_queue(task, ps_index):
    """The queue on ps task ``ps_index`` where workers report the end of training (in the current
    graph; one value per worker: its index, or ``-1 - index`` when it failed)."""
    with tfv1.device(task.device("ps", ps_index)):
        return tfv1.FIFOQueue(2 * task.num_workers, [tf.int32], shapes=[[]],
                              shared_name=_DONE_QUEUE, name=f"done_queue_{ps_index}")


def report_failure_to_ps(server, task, timeout_s=5.0):
    """Tell every ps that worker ``task`` failed, from a graph and session of its own (for a
    failure before the trainer's session exists); a ps that cannot be reached is logged."""
    graph = tf.Graph()
    with graph.as_default():
        reports = [done_queue(task, i).enqueue(-1 - task.task_index) for i in range(task.num_ps)]
    config = tfv1.ConfigProto(device_filters=["/job:ps", task.device()])
    try:
        with tfv1.Session(server.target, graph=graph, config=config) as sess:
            sess.run(reports, options=tfv1.RunOptions(timeout_in_ms=int(timeout_s * 1000)))
    except tf.errors.OpError as e:
        logger.info(f"{task.device()}: could not report the failure to the ps: "
                    f"{describe_cluster_error(e)}")


def unreachable_tasks(task):
    """``"/job:<job>/task:<i> (<address>)"`` of every other task whose server does not accept
    connections now (died or was killed)."""
    gone = []
    for job in task.cluster.jobs:
        for index in range(task.cluster.num_tasks(job)):
            if (job, index) == (task.job_name, task.task_index):
                continue
            address = task.address(job, index)
            if not _reachable(address):
                gone.append(f"{task.device(job, index)} ({address})")
    return gone


class _WorkerWatch:
    """Tells a worker that stopped (its server went away) before reporting the end of training."""

    def __init__(self, task, startup_timeout_s):
        self._task = task
        self._start = time.monotonic()
        self._startup_timeout_s = startup_timeout_s
        self._seen = set()
        self._lost = {}

    def check(self, remaining):
        for index in sorted(remaining):
            address = self._task.address("worker", index)
            if _reachable(address):
                self._seen.add(index)
                self._lost.pop(index, None)
            elif index in self._seen:
                self._lost[index] = self._lost.get(index, 0) + 1
                if self._lost[index] >= 3:
                    raise ClusterError(f"{self._task.device()}: worker {index} ({address}) went "
                                       "away before it finished training.")
            elif time.monotonic() - self._start > self._startup_timeout_s:
                raise ClusterError(f"{self._task.device()}: worker {index} ({address}) did not "
                                   f"come up within {self._startup_timeout_s:.0f} s.")


def run_parameter_server(server, startup_timeout_s=DEFAULT_STARTUP_TIMEOUT_S, poll_s=0.5):
    """Serve the variables of a ps task until every worker reports the end of training.

    Instead of ``server.join()`` (which never returns), the ps waits on a queue that each worker
    fills when its training ends, and returns when all did, so the ps process exits by itself.

    Raises:
        ClusterError: a worker reported a failure, went away before finishing, or did not come up
            within ``startup_timeout_s``.

    Example:
        >>> task = ClusterTask.from_tf_config()
        >>> if task.job_name == "ps":
        ...     run_parameter_server(create_server(task))
    """
    task = ClusterTask.from_server(server)
    if task.job_name != "ps":
        raise ValueError(f"run_parameter_server runs on a ps task, not on {task.device()}.")
    graph = tf.Graph()
    with graph.as_default():
        dequeue = done_queue(task, task.task_index).dequeue()
    graph.finalize()
    sess = tfv1.Session(server.target, graph=graph,
                        config=tfv1.ConfigProto(device_filters=[task.device()]))
    watch = _WorkerWatch(task, startup_timeout_s)
    options = tfv1.RunOptions(timeout_in_ms=max(1, int(poll_s * 1000)))
    remaining = set(range(task.num_workers))
    logger.info(f"{task.device()}: serving until {len(remaining)} worker(s) finish.")
    try:
        while remaining:
            try:
                value = int(sess.run(dequeue, options=options))
            except tf.errors.DeadlineExceededError:
                watch.check(remaining)
                continue
            if value < 0:
                raise ClusterError(f"{task.device()}: worker {-1 - value} reported that its "
                                   "training failed; the parameter server stops.")
            remaining.discard(value)
        logger.info(f"{task.device()}: every worker finished.")
    finally:
        sess.close()
