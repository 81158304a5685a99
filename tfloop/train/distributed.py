"""Data-parallel training over several worker processes (between-graph replication).

Every worker runs the same script: it builds its own graph with one tower per local device and
talks to the others through its ``tf.distribute.Server``. Worker 0 is the chief: chief-only
callbacks (``ModelSaver``, ``InferenceRunner`` ...) run there only, and a ``session_init`` (a
restore) is applied there only; the others get the values from it.

* :class:`DistributedTrainerReplicated`: every worker keeps its own copy of the variables; the
  gradients of all towers of all workers are all-reduced with collective ops.
* :class:`DistributedTrainerParameterServer`: the variables live on the ``ps`` tasks; each step
  every worker adds its gradient to an accumulator there, the chief applies their mean once, and
  the other workers wait for that update before their next step.
"""

from tfloop.compat import tf, tfv1
from tfloop.tfutils.allreduce import (
    CollectiveGroup,
    allreduce_grads,
    collective_any,
    collective_broadcast,
    densify,
    replica_difference,
)
from tfloop.tfutils.common import get_global_step_var
from tfloop.train.cluster import (
    DEFAULT_STARTUP_TIMEOUT_S,
    ClusterTask,
    create_server,
    describe_cluster_error,
    done_queue,
    report_failure_to_ps,
    run_parameter_server,
)
from tfloop.train.cluster_trainer import ClusterTrainerMixin, ExitBarrier
from tfloop.train.devices import resolve_devices
from tfloop.train.multigpu import DataParallelTrainer, SyncMultiGPUTrainerReplicated
from tfloop.train.passes import any_pass_ended
from tfloop.train.tower_variables import ParameterPlacer, tower_of_copy
from tfloop.utils import logger

__all__ = ["DistributedTrainerReplicated", "DistributedTrainerParameterServer",
           "trainer_from_tf_config"]

class DistributedTrainerReplicated(ClusterTrainerMixin, SyncMultiGPUTrainerReplicated):
    """Replicated data-parallel training over several workers, all-reduced with collective ops.

    Each worker builds towers on its local devices exactly like
    :class:`SyncMultiGPUTrainerReplicated`; one collective group spans every tower of every worker.
    After the variables are initialized (and restored, on the chief) every variable of every worker
    takes the chief's value. Worker 0 writes the checkpoints; they load into a
    :class:`SimpleTrainer` unchanged.

    Args:
        gpus: the towers of each worker: an int N, GPU indices, or device strings.
        server (tf.distribute.Server): this worker's server, from
            :func:`tfloop.train.cluster.create_server`; None: this process trains alone, on its
            own towers in a local session, with no server (as :class:`HorovodTrainer` does
            without ``TF_CONFIG``).
        startup_timeout_s (float): how long to wait for the other workers at the start.

    Example:
        >>> task = ClusterTask.from_tf_config()
        >>> trainer = DistributedTrainerReplicated(1, create_server(task, timeout_s=60))
        >>> launch_train_with_config(config, trainer)
    """

    _may_train_alone = True

    def __init__(self, gpus, server, startup_timeout_s=DEFAULT_STARTUP_TIMEOUT_S):
        SyncMultiGPUTrainerReplicated.__init__(self, gpus, average=True, mode="collective")
        self._init_cluster(server, startup_timeout_s)
        gpu_only = all("GPU" in d for d in self.devices)
        self._group = CollectiveGroup(self.num_towers * self.num_workers,
                                      communication_hint="nccl" if gpu_only else "auto")
        if server is None:
            return
        leader = server.server_def.default_session_config.experimental.collective_group_leader
        if not leader:
            raise ValueError("DistributedTrainerReplicated needs a server whose config sets "
                             "experimental.collective_group_leader (else collective ops across "
                             "workers wait forever): create it with "
                             "tfloop.train.cluster.create_server.")

    def _needed_tasks(self):
        return [("worker", 0)]

    def _device_filters(self):
        return sorted({self.task.device(), self.task.device("worker", 0)})

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        if self.trains_alone:
            return super()._setup_graph(input, get_cost_fn, get_opt_fn)
        with tfv1.device(self.task.device()):
            train_op = super()._setup_graph(input, get_cost_fn, get_opt_fn)
            self.register_callback(ExitBarrier(self.task))
        return train_op

    def _allreduce(self, grads):
        return allreduce_grads(grads, self.devices, average=self.average, mode="collective",
                               group=self._group)

    def pass_end_tensors(self, flags):
        """Whether any tower of any worker took the last batch of its pass (a collective maximum
        over every tower, after the step's update, so every worker ends the epoch after the same
        step), and whether this worker's own pass ended."""
        own = any_pass_ended(flags)
        with tf.name_scope("pass_end"), tf.control_dependencies([self.train_op]):
            return any_pass_ended(collective_any(flags, self.devices, self._group)), own

    def _build_broadcast(self):
        self.replica_difference = replica_difference(self.replica_variables)
        copies = {}
        for source, tower_copies in self.replica_variables:
            for copy in tower_copies:
                copies[(source.op.name, tower_of_copy(copy))] = copy
        values = [v for v in sorted(tfv1.global_variables(), key=lambda v: v.op.name)
                  if v.dtype.base_dtype.is_floating or v.dtype.base_dtype.is_integer or
                  v.dtype.base_dtype == tf.bool]
        members = [(device, [v if k == 0 else copies.get((v.op.name, k)) for v in values])
                   for k, device in enumerate(self.devices)]
        self._broadcast_op = collective_broadcast(members, self.is_chief, self._group)

    def _after_initialize(self):
        if self.trains_alone:
            return super()._after_initialize()
        self._run_startup(self._broadcast_op, "the broadcast of the chief's variables to every "
                                              "worker")
        self.check_replicas()


class DistributedTrainerParameterServer(ClusterTrainerMixin, DataParallelTrainer):
    """Synchronous data-parallel training with the variables on the ``ps`` tasks.

    Variables are spread over the ps tasks (fewest bytes first, the same on every worker). Each
    step every worker averages the gradients of its towers and adds them to one accumulator per
    variable on the ps; the chief takes the mean of all workers' gradients and applies it once;
    the other workers wait for that update. Run :func:`tfloop.train.cluster.run_parameter_server`
    on the ps tasks: it returns when every worker has finished.

    Args:
        gpus: the towers of each worker: an int N, GPU indices, or device strings.
        server (tf.distribute.Server): this worker's server (from ``create_server``).
        startup_timeout_s (float): how long a worker waits for the ps tasks and for the chief to
            initialize the variables.

    Example:
        >>> trainer = DistributedTrainerParameterServer(1, create_server(task, timeout_s=60))
    """

    _own_pass_end = None

    def __init__(self, gpus, server, startup_timeout_s=DEFAULT_STARTUP_TIMEOUT_S):
        DataParallelTrainer.__init__(self, gpus)
        self._init_cluster(server, startup_timeout_s)
        if self.task.num_ps == 0:
            raise ValueError("DistributedTrainerParameterServer needs 'ps' tasks in the cluster, "
                             f"which has only {self.task.cluster.as_dict()}.")

    def _needed_tasks(self):
        return [("ps", i) for i in range(self.task.num_ps)]

    def _device_filters(self):
        return ["/job:ps", self.task.device()]

    def _owns_variable(self, variable):
        # The chief initializes the variables on the ps; every worker those on its own devices.
        return self.is_chief or not variable.device.startswith("/job:ps")

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        task = self.task
        placer = ParameterPlacer([task.device("ps", i) for i in range(task.num_ps)])
        with tfv1.device(placer.device_function(task.device())):
            global_step = get_global_step_var()
            opt, grads, var_lists = self._shared_variable_towers(input, get_opt_fn, placer)
            variables = var_lists[0]
            own = any_pass_ended(input.pass_end_flags()) if input.marks_pass_ends() else None
            with tf.name_scope("sync"):
                train_op = self._build_sync(opt, grads, variables, global_step, own)
        logger.info(f"{type(self).__name__}: {self.num_towers} tower(s) on "
                    f"{', '.join(self.devices)} (one batch each per step), variables on "
                    f"{', '.join(sorted({v.device for v in variables}))}.")
        return train_op

    def _build_sync(self, opt, grads, variables, global_step, own_pass_end=None):
        task, n = self.task, self.num_towers
        local_step = global_step.read_value()
        apply_ops, accumulators = [], []
        if own_pass_end is not None:
            # Each worker's flag goes into an accumulator beside its gradients; the chief's mean
            # of them rides on the tokens that release the other workers (see pass_end_tensors).
            with tfv1.device(task.device("ps", 0)):
                flags = tfv1.ConditionalAccumulator(tf.float32, shape=[], reduction_type="MEAN",
                                                    shared_name="tfloop_acc/pass_end")
            apply_ops.append(flags.apply_grad(tf.cast(own_pass_end, tf.float32),
                                              local_step=local_step))
        self._own_pass_end = own_pass_end
        for j, variable in enumerate(variables):
            grad = tf.math.add_n([densify(g[j]) for g in grads])
            if n > 1:
                grad = grad * tf.constant(1.0 / n, grad.dtype)
            with tfv1.device(variable.device):
                accumulator = tfv1.ConditionalAccumulator(
                    grad.dtype, shape=variable.shape, reduction_type="MEAN",
                    shared_name="tfloop_acc/" + variable.op.name)
            accumulators.append(accumulator)
            apply_ops.append(accumulator.apply_grad(grad, local_step=local_step))
        with tfv1.device(task.device("ps", 0)):
            self._start_queue = tfv1.FIFOQueue(-1, [tf.int32], shapes=[[]],
                                               shared_name="tfloop_start", name="start_queue")
            tokens = {i: tfv1.FIFOQueue(-1, [tf.int64], shapes=[[]],
                                        shared_name=f"tfloop_token_{i}",
                                        name=f"token_{i}")
                      for i in range(1, task.num_workers)}
        self._done_ops = [(done_queue(task, i).enqueue(task.task_index),
                           done_queue(task, i).enqueue(-1 - task.task_index))
                          for i in range(task.num_ps)]
        if not self.is_chief:
            self._start_op = self._start_queue.dequeue()
            with tf.control_dependencies(apply_ops):
                token = tokens[task.task_index].dequeue()
            self._pass_ended = tf.greater(token, 0) if own_pass_end is not None else None
            return tf.group(token, name="train_op")
        self._start_op = self._start_queue.enqueue_many(
            [tf.zeros([task.num_workers - 1], tf.int32)])
        with tf.control_dependencies(apply_ops):
            averaged = [a.take_grad(task.num_workers) for a in accumulators]
            self._pass_ended = tf.greater(flags.take_grad(task.num_workers), 0.0) \
                if own_pass_end is not None else None
        update = opt.apply_gradients(list(zip(averaged, variables)), global_step=global_step)
        with tf.control_dependencies([update]):
            # A token releases a worker for its next step; it says whether the epoch ended.
            token = global_step.read_value() if self._pass_ended is None else \
                tf.cast(self._pass_ended, tf.int64)
            enqueues = [q.enqueue(token) for q in tokens.values()]
        return tf.group(update, *enqueues, name="train_op")

    def pass_end_tensors(self, flags):
        """Whether the pass of any worker ended with this step (the chief's mean of the workers'
        flags, handed to each worker with the token that releases it), and whether this worker's
        own pass did."""
        if self._own_pass_end is None:
            raise ValueError(f"{self._input_source} did not mark the ends of passes when "
                             f"{type(self).__name__} built its step.")
        return self._pass_ended, self._own_pass_end

    def _after_initialize(self):
        what = ("the chief's signal that the variables are ready" if not self.is_chief
                else "telling the workers that the variables are ready")
        self._run_startup(self._start_op, what)

    def _signal_end(self, failed):
        if self.sess is None:
            if failed:
                report_failure_to_ps(self.server, self.task)
            return
        for done, abort in self._done_ops:
            try:
                self.sess.run(abort if failed else done, options=tfv1.RunOptions(
                    timeout_in_ms=5000))
            except tf.errors.OpError as e:
                logger.info(f"{self.task.device()}: could not report the end to the ps: "
                            f"{describe_cluster_error(e)}")


def trainer_from_tf_config(gpus=1, tf_config=None, timeout_s=None,
                           startup_timeout_s=DEFAULT_STARTUP_TIMEOUT_S):
    """Build this task's server and trainer from ``TF_CONFIG``.

    On a worker: returns :class:`DistributedTrainerParameterServer` when the cluster has ``ps``
    tasks, else :class:`DistributedTrainerReplicated`. On a ps task: serves the variables until
    every worker finished, then returns None.

    Args:
        gpus: the towers of each worker (an int N: N GPUs, or N logical CPU devices without GPUs).
        tf_config (str or dict): the cluster description; the ``TF_CONFIG`` variable by default.
        timeout_s (float): the server's operation timeout (see ``create_server``).

    Example:
        >>> trainer = trainer_from_tf_config(gpus=1)
        >>> if trainer is not None:                  # None: this was a ps task, now finished
        ...     launch_train_with_config(config, trainer)
    """
    task = ClusterTask.from_tf_config(tf_config)
    kwargs = {} if timeout_s is None else {"timeout_s": timeout_s}
    if task.job_name == "ps":
        run_parameter_server(create_server(task, **kwargs), startup_timeout_s=startup_timeout_s)
        return None
    cpu = [int(d.rsplit(":", 1)[1]) for d in resolve_devices(gpus) if "CPU" in d]
    server = create_server(task, num_cpu_devices=max(cpu) + 1 if cpu else None, **kwargs)
    cls = DistributedTrainerParameterServer if task.num_ps else DistributedTrainerReplicated
    return cls(gpus, server, startup_timeout_s=startup_timeout_s)
