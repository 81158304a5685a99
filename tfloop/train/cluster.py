"""Clusters of TensorFlow servers: servers with the right config, start-up, failures, the ps loop.

Which task a process is (``TF_CONFIG``) is :class:`~tfloop.train.cluster_task.ClusterTask`
(``cluster_task.py``), which this module also binds.

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
import os
import re
import socket
import time

from tfloop.compat import tf, tfv1
from tfloop.train.cluster_task import ClusterTask
from tfloop.utils import logger
from tfloop.utils.checks import check_number, check_positive_int

__all__ = ["ClusterError", "ClusterTask", "create_server", "session_config_for", "wait_for_tasks",
           "shard_dataset", "run_parameter_server", "DEFAULT_TIMEOUT_S",
           "DEFAULT_STARTUP_TIMEOUT_S", "CLUSTER_ERRORS", "describe_cluster_error"]

DEFAULT_TIMEOUT_S = 300.0
DEFAULT_STARTUP_TIMEOUT_S = 300.0
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
