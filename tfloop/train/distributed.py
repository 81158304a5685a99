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
import time

from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.tfutils.allreduce import (
    CollectiveGroup,
    allreduce_grads,
    collective_broadcast,
    densify,
    replica_difference,
)
from tfloop.tfutils.common import get_global_step_var
from tfloop.tfutils.sessinit import JustCurrentSession
from tfloop.train.base import Trainer
from tfloop.train.cluster import (
    CLUSTER_ERRORS,
    DEFAULT_STARTUP_TIMEOUT_S,
    ClusterError,
    ClusterTask,
    create_server,
    describe_cluster_error,
    done_queue,
    report_failure_to_ps,
    run_parameter_server,
    session_config_for,
    unreachable_tasks,
    wait_for_tasks,
)
from tfloop.train.devices import check_session_devices, resolve_devices
from tfloop.train.multigpu import (
    _COPY_PREFIX,
    DataParallelTrainer,
    SyncMultiGPUTrainerReplicated,
    _ParameterPlacer,
)
from tfloop.utils import files, logger

__all__ = ["DistributedTrainerReplicated", "DistributedTrainerParameterServer",
           "trainer_from_tf_config"]

class _ClusterSessionCreator:
    """A session on this worker's server; initializes the variables this worker owns."""

    def __init__(self, target, config, owns, check):
        self.target = target
        self.config = config
        self._owns = owns
        self._check = check

    def create_session(self, graph):
        sess = tfv1.Session(self.target, graph=graph, config=self.config)
        self._check(sess)
        with graph.as_default():
            owned = [v for v in tfv1.global_variables() if self._owns(v)]
            sess.run([tfv1.variables_initializer(owned), tfv1.local_variables_initializer(),
                      tfv1.tables_initializer()])
        return sess


class _ClusterTrainerMixin:
    """What both distributed trainers share: the task, devices, sessions, errors, the end."""

    def _init_cluster(self, server, startup_timeout_s):
        self.server = server
        self.task = ClusterTask.from_server(server)
        if self.task.job_name != "worker":
            raise ValueError(f"{type(self).__name__} runs on worker tasks; {self.task.device()} "
                             "is a ps task: call run_parameter_server(server) there.")
        self.is_chief = self.task.is_chief
        self.startup_timeout_s = float(startup_timeout_s)
        self.timeout_s = server.server_def.default_session_config.operation_timeout_in_ms / 1000.0
        if self.timeout_s == 0:
            logger.warning(f"{type(self).__name__}: the server has no operation timeout, so a dead "
                           "task makes the others wait forever: create it with "
                           "tfloop.train.cluster.create_server.")
        self.local_devices = self.devices
        self.devices = [self.task.device() + d for d in self.local_devices]
        self._ended = False

    def _owns_variable(self, variable):
        return True

    def _logdir_of_this_process(self, run_logdir):
        """A worker other than the chief writes into ``<the run's log dir>/worker-<index>``, so
        that its monitors do not overwrite the chief's files."""
        if self.is_chief:
            return run_logdir
        return files.join(run_logdir, f"worker-{self.task.task_index}")

    def setup_callbacks(self, callbacks, monitors):
        """As in :class:`Trainer`, with the graph on this worker's device."""
        with self.graph.as_default(), tfv1.device(self.task.device()):
            super().setup_callbacks(callbacks, monitors)

    def initialize(self, session_creator=None, session_init=None):
        """Wait for the tasks this worker needs, create its session, and sync the start."""
        if session_init is not None and not isinstance(session_init, JustCurrentSession) and \
                not self.is_chief:
            logger.info(f"{self.task.device()}: session_init {session_init} is applied on the "
                        "chief; this worker gets the values from it.")
            session_init = None
        if session_creator is not None:
            raise ValueError(f"{type(self).__name__}: the session is created on this worker's "
                             "server with the server's config; give session options to "
                             "create_server, not session_config= or session_creator=.")
        wait_for_tasks(self.task, self._needed_tasks(), self.startup_timeout_s)
        # Trainer.initialize adds the run's options to its config, as to every session's.
        creator = _ClusterSessionCreator(
            self.server.target, session_config_for(self.server, self._device_filters()),
            self._owns_variable,
            lambda sess: check_session_devices(sess, self.devices, type(self).__name__))
        try:
            with self.graph.as_default(), tfv1.device(self.task.device()):
                Trainer.initialize(self, creator, session_init)
            self._after_initialize()
        except BaseException:
            self._end(failed=True)
            raise

    def _run_startup(self, fetch, what):
        try:
            return self.sess.run(fetch, options=tfv1.RunOptions(
                timeout_in_ms=int(self.startup_timeout_s * 1000)))
        except CLUSTER_ERRORS as e:
            raise ClusterError(f"{self.task.device()}: {what} did not complete within "
                               f"{self.startup_timeout_s:.0f} s: {type(e).__name__}: "
                               f"{describe_cluster_error(e)}") from e

    def run_step(self):
        try:
            self.hooked_sess.run(self.train_op)
        except CLUSTER_ERRORS as e:
            raise ClusterError(
                f"{self.task.device()}: step {self.global_step + 1} failed: another task of the "
                f"cluster died, hung or stopped responding (timeout {self.timeout_s:g} s): "
                f"{_failure_cause(self.task, e)}") from e

    def train(self, *args, **kwargs):
        """As :meth:`Trainer.train`; a failure before the first step (building the graph, the
        session) is reported to the other tasks too, so that none waits for this worker."""
        try:
            super().train(*args, **kwargs)
        except BaseException:
            self._end(failed=True)
            raise

    def main_loop(self, steps_per_epoch, starting_epoch, max_epoch):
        try:
            if not self.is_chief:
                self._check_same_start(steps_per_epoch, starting_epoch)
            super().main_loop(steps_per_epoch, starting_epoch, max_epoch)
        except CLUSTER_ERRORS as e:    # a callback's own session call, outside the step
            self._end(failed=True)
            raise ClusterError(
                f"{self.task.device()}: a session call at global step {self.global_step} "
                f"failed: another task of the cluster died, hung or stopped responding "
                f"(timeout {self.timeout_s:g} s): {_failure_cause(self.task, e)}") from e
        except BaseException:
            self._end(failed=True)
            raise
        self._end(failed=False)

    def _check_same_start(self, steps_per_epoch, starting_epoch):
        """A worker must start at the epoch of the global step the chief restored: a worker that
        did not resume (no log directory of its own) would train other epochs and wait forever
        for the chief at the end."""
        step = int(self.sess.run(tfv1.train.get_global_step(self.graph)))
        chief_epoch = step // steps_per_epoch + 1
        if chief_epoch != starting_epoch:
            raise ClusterError(
                f"{self.task.device()}: this worker starts at epoch {starting_epoch}, but the "
                f"chief resumed at global step {step} (epoch {chief_epoch}): the workers did not "
                "resume from the same log directory. Call logger.set_logger_dir(<the chief's "
                "directory>, action='keep') on every worker before AutoResumeTrainConfig "
                "(workers other than the chief write to its worker-<index> subdirectory).")

    def _end(self, failed):
        if not self._ended:
            self._ended = True
            self._signal_end(failed)

    def _signal_end(self, failed):
        """Tell the other tasks that this worker's training ended."""


def _failure_cause(task, error):
    """Who failed, as far as this worker can tell: TensorFlow's error names the task the step
    waited on (often a healthy ps), so the tasks that cannot be reached now are named instead,
    workers first (a ps stops by itself once a worker failed)."""
    gone = unreachable_tasks(task)
    for _ in range(5):   # a task that is dying may still accept connections for a moment
        if gone:
            break
        time.sleep(0.2)
        gone = unreachable_tasks(task)
    workers = [t for t in gone if t.startswith("/job:worker")]
    ps = [t for t in gone if not t.startswith("/job:worker")]
    if workers:
        also = (f"; {', '.join(ps)} stopped too (a ps stops when a worker fails)" if ps else "")
        return f"{', '.join(workers)} cannot be reached (killed or crashed?){also}"
    if ps:
        return f"{', '.join(ps)} cannot be reached (killed or crashed?)"
    return f"{type(error).__name__}: {describe_cluster_error(error)}"


class _ExitBarrier(Callback):
    """Workers leave together: a worker that exits while another still runs its last collective
    would take data the other still needs. Non-chief workers report to the chief and wait for its
    release; the chief waits for every report, then releases them."""

    _chief_only = False

    def __init__(self, task):
        self._task = task

    def _setup_graph(self):
        n = self._task.num_workers
        with tfv1.device(self._task.device("worker", 0)):
            done = tfv1.FIFOQueue(n, [tf.int32], shapes=[[]], shared_name="tfloop_exit_done",
                                  name="exit_done")
            release = tfv1.FIFOQueue(n, [tf.int32], shapes=[[]], shared_name="tfloop_exit_release",
                                     name="exit_release")
        if self._task.is_chief:
            with tf.control_dependencies([done.dequeue_many(n - 1)]):
                self._ops = [release.enqueue_many([tf.zeros([n - 1], tf.int32)])]
        else:
            self._ops = [done.enqueue(self._task.task_index), release.dequeue()]

    def _after_train(self):
        if self.trainer.training_error is not None or self._task.num_workers == 1:
            return
        try:
            for op in self._ops:
                self.trainer.sess.run(op)
        except (tf.errors.UnavailableError, tf.errors.CancelledError):
            # The chief leaves right after releasing the others; its reply may not arrive.
            logger.info(f"{self._task.device()}: the chief left after the last step.")
        except tf.errors.DeadlineExceededError as e:
            raise ClusterError(f"{self._task.device()}: the other workers did not finish their "
                               f"last step: {describe_cluster_error(e)}") from e

    def __str__(self):
        return "ExitBarrier"


class DistributedTrainerReplicated(_ClusterTrainerMixin, SyncMultiGPUTrainerReplicated):
    """Replicated data-parallel training over several workers, all-reduced with collective ops.

    Each worker builds towers on its local devices exactly like
    :class:`SyncMultiGPUTrainerReplicated`; one collective group spans every tower of every worker.
    After the variables are initialized (and restored, on the chief) every variable of every worker
    takes the chief's value. Worker 0 writes the checkpoints; they load into a
    :class:`SimpleTrainer` unchanged.

    Args:
        gpus: the towers of each worker: an int N, GPU indices, or device strings.
        server (tf.distribute.Server): this worker's server, from
            :func:`tfloop.train.cluster.create_server`.
        startup_timeout_s (float): how long to wait for the other workers at the start.

    Example:
        >>> task = ClusterTask.from_tf_config()
        >>> trainer = DistributedTrainerReplicated(1, create_server(task, timeout_s=60))
        >>> launch_train_with_config(config, trainer)
    """

    def __init__(self, gpus, server, startup_timeout_s=DEFAULT_STARTUP_TIMEOUT_S):
        SyncMultiGPUTrainerReplicated.__init__(self, gpus, average=True, mode="collective")
        self._init_cluster(server, startup_timeout_s)
        leader = server.server_def.default_session_config.experimental.collective_group_leader
        if not leader:
            raise ValueError("DistributedTrainerReplicated needs a server whose config sets "
                             "experimental.collective_group_leader (else collective ops across "
                             "workers wait forever): create it with "
                             "tfloop.train.cluster.create_server.")
        gpu_only = all("GPU" in d for d in self.devices)
        self._group = CollectiveGroup(self.num_towers * self.task.num_workers,
                                      communication_hint="nccl" if gpu_only else "auto")

    def _needed_tasks(self):
        return [("worker", 0)]

    def _device_filters(self):
        return sorted({self.task.device(), self.task.device("worker", 0)})

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        with tfv1.device(self.task.device()):
            train_op = super()._setup_graph(input, get_cost_fn, get_opt_fn)
            self.register_callback(_ExitBarrier(self.task))
        return train_op

    def _allreduce(self, grads):
        return allreduce_grads(grads, self.devices, average=self.average, mode="collective",
                               group=self._group)

    def _build_broadcast(self):
        self.replica_difference = replica_difference(self.replica_variables)
        copies = {}
        for source, tower_copies in self.replica_variables:
            for copy in tower_copies:
                copies[(source.op.name, int(_COPY_PREFIX.match(copy.op.name).group(1)))] = copy
        values = [v for v in sorted(tfv1.global_variables(), key=lambda v: v.op.name)
                  if v.dtype.base_dtype.is_floating or v.dtype.base_dtype.is_integer or
                  v.dtype.base_dtype == tf.bool]
        members = [(device, [v if k == 0 else copies.get((v.op.name, k)) for v in values])
                   for k, device in enumerate(self.devices)]
        self._broadcast_op = collective_broadcast(members, self.is_chief, self._group)

    def _after_initialize(self):
        self._run_startup(self._broadcast_op, "the broadcast of the chief's variables to every "
                                              "worker")
        self.check_replicas()


class DistributedTrainerParameterServer(_ClusterTrainerMixin, DataParallelTrainer):
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
        placer = _ParameterPlacer([task.device("ps", i) for i in range(task.num_ps)])
        with tfv1.device(placer.device_function(task.device())):
            global_step = get_global_step_var()
            opt, grads, var_lists = self._shared_variable_towers(input, get_opt_fn, placer)
            variables = var_lists[0]
            with tf.name_scope("sync"):
                train_op = self._build_sync(opt, grads, variables, global_step)
        logger.info(f"{type(self).__name__}: {self.num_towers} tower(s) on "
                    f"{', '.join(self.devices)} (one batch each per step), variables on "
                    f"{', '.join(sorted({v.device for v in variables}))}.")
        return train_op

    def _build_sync(self, opt, grads, variables, global_step):
        task, n = self.task, self.num_towers
        local_step = global_step.read_value()
        apply_ops, accumulators = [], []
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
                return tf.group(tokens[task.task_index].dequeue(), name="train_op")
        self._start_op = self._start_queue.enqueue_many(
            [tf.zeros([task.num_workers - 1], tf.int32)])
        with tf.control_dependencies(apply_ops):
            averaged = [a.take_grad(task.num_workers) for a in accumulators]
        update = opt.apply_gradients(list(zip(averaged, variables)), global_step=global_step)
        with tf.control_dependencies([update]):
            step = global_step.read_value()
            enqueues = [q.enqueue(step) for q in tokens.values()]
        return tf.group(update, *enqueues, name="train_op")

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
