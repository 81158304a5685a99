"""tensorpack's ``HorovodTrainer`` and ``BytePSTrainer`` names, on TensorFlow's own runtime.

Horovod has no release for current TensorFlow (0.28.1, its last, has no wheels and did not
finish building against TensorFlow 2.21 in 45 minutes on a 2-core machine), so these trainers
keep Horovod's model, one process per device all-reducing its gradients, and run it with
TensorFlow's collective all-reduce across the processes of a ``TF_CONFIG`` cluster
(:class:`~tfloop.train.distributed.DistributedTrainerReplicated`). What a Horovod script asks
of ``hvd`` it asks of the trainer: ``hvd.rank()`` is ``trainer.rank``, ``hvd.size()`` is
``trainer.num_workers``, ``hvd.local_rank()`` is ``trainer.local_rank``.
"""
from tfloop.callbacks.base import CallbackFactory
from tfloop.compat import tf
from tfloop.train.cluster import DEFAULT_STARTUP_TIMEOUT_S, ClusterTask, create_server
from tfloop.train.distributed import DistributedTrainerReplicated
from tfloop.utils import logger

__all__ = ["HorovodTrainer", "BytePSTrainer"]


class HorovodTrainer(DistributedTrainerReplicated):
    """Data-parallel training with one process per device, as with Horovod.

    Launch one process per device with ``TF_CONFIG`` set in each (``docs/distributed.md``):
    where ``horovodrun -np 2 python train.py`` started Horovod's processes, a launcher (Kubeflow,
    Slurm, a shell loop) starts ``python train.py`` with a ``TF_CONFIG`` naming this process's
    task. Every process builds one tower, on its local GPU (``local_rank``) or its CPU; the
    gradients are all-reduced with TensorFlow's collective ops and the variables start from the
    chief's (rank 0) values. Without ``TF_CONFIG`` the script trains alone, as a one-process
    Horovod run does: one tower in a local session, with no TensorFlow server (nothing listens
    on the network).

    Args:
        average (bool): average the gradients over the processes (True) or sum them.
        compression: Horovod's gradient compression; only ``None`` (values are sent as they
            are).
        timeout_s (float): how long a step waits for another process before failing
            (``create_server``); its default when None.
        startup_timeout_s (float): how long to wait for the other processes at the start.

    Attributes:
        BROADCAST_EVERY_EPOCH (bool): give every process the chief's variables again after
            each epoch (True by default, as in tensorpack; the replicas are equal anyway, except
            for statistics each process keeps, such as batch-norm moving averages).

    Example:
        >>> trainer = HorovodTrainer()
        >>> if trainer.rank == 0:
        ...     logger.set_logger_dir("train_log/run")
        >>> launch_train_with_config(config, trainer)
    """

    def __init__(self, average=True, compression=None, *, timeout_s=None,
                 startup_timeout_s=DEFAULT_STARTUP_TIMEOUT_S):
        if compression is not None:
            raise ValueError(
                f"{type(self).__name__}: compression={compression!r} is Horovod's; tfloop "
                "all-reduces with TensorFlow's collective ops, which send gradients as they are: "
                "leave compression=None (or train in float16 with mixed_precision='float16').")
        task = _task_of_this_process()
        self._local_rank = 0 if task is None else _local_rank(task)
        gpus = tf.config.list_physical_devices("GPU")
        kwargs = {} if timeout_s is None else {"timeout_s": timeout_s}
        server = None if task is None else create_server(task, **kwargs)
        super().__init__([self._local_rank] if gpus else 1, server,
                         startup_timeout_s=startup_timeout_s)
        self.average = bool(average)
        self.BROADCAST_EVERY_EPOCH = True
        if task is None:
            logger.info(f"{type(self).__name__}: Horovod is not used; without TF_CONFIG this "
                        "process trains alone, with no server (docs/distributed.md, 'From "
                        "Horovod').")
        elif self.is_chief:
            logger.info(f"{type(self).__name__}: Horovod is not used; the {task.num_workers} "
                        "process(es) of the TF_CONFIG cluster all-reduce their gradients with "
                        "TensorFlow's collective ops (docs/distributed.md, 'From Horovod').")

    @property
    def local_rank(self):
        """This process's index among the processes on its host (Horovod's ``local_rank``)."""
        return self._local_rank

    def mpi_enabled(self):
        """Whether training runs under MPI: never (tensorpack's ``HorovodTrainer.mpi_enabled``)."""
        return False

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        train_op = super()._setup_graph(input, get_cost_fn, get_opt_fn)
        self.register_callback(CallbackFactory(trigger=self._broadcast_after_epoch)
                               .set_chief_only(False))
        return train_op

    def _broadcast_after_epoch(self, _callback):
        if self.BROADCAST_EVERY_EPOCH:
            self.sess.run(self._broadcast_op)


class BytePSTrainer(HorovodTrainer):
    """tensorpack's BytePS trainer: the same one-process-per-device training as
    :class:`HorovodTrainer` (BytePS, like Horovod, has no release for current TensorFlow).

    Example:
        >>> launch_train_with_config(config, BytePSTrainer())
    """


def _task_of_this_process():
    """This process's task from ``TF_CONFIG``; without it None: the process trains alone."""
    try:
        return ClusterTask.from_tf_config()
    except ValueError as e:
        if "TF_CONFIG is not set" not in str(e):
            raise
    return None


def _local_rank(task):
    """The index of this worker among the workers listed on its host, in worker order."""
    addresses = [task.address("worker", i) for i in range(task.num_workers)]
    host = addresses[task.task_index].rpartition(":")[0]
    return [a.rpartition(":")[0] for a in addresses[:task.task_index]].count(host)
