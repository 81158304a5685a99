"""What both cluster trainers share (``distributed.py``): this worker's task and devices, its
session on the server, start-up within a deadline, a failed step said as :class:`ClusterError`
naming the task that is gone, and the end of training that every worker reaches together."""
import time

from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.tfutils.sessinit import JustCurrentSession
from tfloop.train.base import Trainer
from tfloop.train.cluster import (
    CLUSTER_ERRORS,
    ClusterError,
    ClusterTask,
    describe_cluster_error,
    session_config_for,
    unreachable_tasks,
    wait_for_tasks,
)
from tfloop.train.devices import check_session_devices
from tfloop.utils import files, logger
from tfloop.utils.exit_status import is_clean_exit

__all__ = ["ClusterTrainerMixin", "ExitBarrier"]


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


class ClusterTrainerMixin:
    """What both distributed trainers share: the task, devices, sessions, errors, the end.

    A trainer whose class sets ``_may_train_alone`` takes ``server=None``: the process trains
    alone, as a trainer of one machine does (no task, a local session, no server: nothing
    listens on the network)."""

    _may_train_alone = False

    def _init_cluster(self, server, startup_timeout_s):
        self.server = server
        self.startup_timeout_s = float(startup_timeout_s)
        self.local_devices = self.devices
        self._ended = False
        self.log_directory.of_this_process = self._logdir_of_this_process
        if server is None and self._may_train_alone:
            return
        self.task = ClusterTask.from_server(server)
        if self.task.job_name != "worker":
            raise ValueError(f"{type(self).__name__} runs on worker tasks; {self.task.device()} "
                             "is a ps task: call run_parameter_server(server) there.")
        self.is_chief = self.task.is_chief
        self.timeout_s = server.server_def.default_session_config.operation_timeout_in_ms / 1000.0
        if self.timeout_s == 0:
            logger.warning(f"{type(self).__name__}: the server has no operation timeout, so a dead "
                           "task makes the others wait forever: create it with "
                           "tfloop.train.cluster.create_server.")
        self.devices = [self.task.device() + d for d in self.local_devices]

    @property
    def trains_alone(self):
        """Whether this process trains alone: no cluster, no server."""
        return self.server is None

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
        if self.trains_alone:
            return super().setup_callbacks(callbacks, monitors)
        with self.graph.as_default(), tfv1.device(self.task.device()):
            super().setup_callbacks(callbacks, monitors)

    def initialize(self, session_creator=None, session_init=None):
        """Wait for the tasks this worker needs, create its session, and sync the start."""
        if self.trains_alone:
            return super().initialize(session_creator, session_init)
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
        if self.trains_alone:
            return super().run_step()
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
        except BaseException as e:
            self._end(failed=not is_clean_exit(e))
            raise

    def main_loop(self, steps_per_epoch, starting_epoch, max_epoch):
        if self.trains_alone:
            return super().main_loop(steps_per_epoch, starting_epoch, max_epoch)
        try:
            if not self.is_chief:
                self._check_same_start(steps_per_epoch, starting_epoch)
            super().main_loop(steps_per_epoch, starting_epoch, max_epoch)
        except CLUSTER_ERRORS as e:    # a callback's own session call, outside the step
            self._end(failed=True)
            started = self.loop.epoch_num >= self.loop.starting_epoch
            where = f"at global step {self.global_step}" if started else "before the first step"
            raise ClusterError(
                f"{self.task.device()}: a session call {where} "
                f"failed: another task of the cluster died, hung or stopped responding "
                f"(timeout {self.timeout_s:g} s): {_failure_cause(self.task, e)}") from e
        except BaseException as e:
            self._end(failed=not is_clean_exit(e))   # sys.exit(0): a clean stop
            raise
        self._end(failed=False)

    def _check_same_start(self, steps_per_epoch, starting_epoch):
        """A worker must start at the epoch of the global step the chief restored: a worker that
        did not resume (no log directory of its own) would train other epochs and wait forever
        for the chief at the end."""
        step = int(self.sess.run(tfv1.train.get_global_step(self.graph)))
        if steps_per_epoch is None:   # epochs that are passes: the global steps must agree
            own = self.resume.global_step
            same, chief = own == step, f"global step {step}"
            mine = f"global step {own}"
        else:
            chief_epoch = step // steps_per_epoch + 1
            same, chief = chief_epoch == starting_epoch, f"global step {step} (epoch {chief_epoch})"
            mine = f"epoch {starting_epoch}"
        if not same:
            raise ClusterError(
                f"{self.task.device()}: this worker starts at {mine}, but the chief resumed at "
                f"{chief}: the workers did not "
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


class ExitBarrier(Callback):
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
