"""A process's place in a cluster: :class:`ClusterTask`, from ``TF_CONFIG`` or a
``tf.train.ClusterSpec`` (the Estimator and Kubeflow layouts with a ``chief`` job included)."""
import json
import os

from tfloop.compat import tf
from tfloop.utils.checks import is_int

__all__ = ["ClusterTask"]

_JOBS = ("worker", "ps")


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
