"""RayReportCallback: each epoch's stats and the chief's checkpoint, reported to Ray Train or Tune.

Ray's ``report`` is collective in Ray Train (every worker calls it, the same number of times), so
the callback runs on every worker; the chief's stats reach the other workers through Ray's
``broadcast_from_rank_zero``, and only the chief hands over a checkpoint. A Ray Tune trial that
Ray stops (a scheduler such as ASHA, or a stopper) gets ``SystemExit(0)`` from ``report``; the
callback turns it into a clean stop of the training and raises it again when training has ended.
"""
import os
import shutil
import tempfile

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.callbacks.inference_loop import InferenceRunnerBase
from tfloop.callbacks.model_saver import ModelSaver
from tfloop.utils import files, logger
from tfloop.utils.extras import import_extra

__all__ = ["RayReportCallback", "ray_checkpoint_dir"]

_OUTSIDE_RAY = ("{user} runs inside Ray: in the train_loop_per_worker of a "
                "ray.train.tensorflow.TensorflowTrainer, or in a function trainable of Ray Tune "
                "(tune.Tuner(train_fn, ...)); this process is neither.")
# How long the process of a trial that Ray Tune stopped waits for its training to end.
_END_TIMEOUT_S = 120
# Listed after this callback, they would save or put the epoch's results after its report.
_REPORT_AFTER = (ModelSaver, InferenceRunnerBase)


class _RaySession:
    """Ray's reporting functions in this process: a Ray Train worker's, or a Tune trial's."""

    def __init__(self, user):
        import_extra("ray.train", "ray", user)
        from ray.train.v2._internal.util import _in_ray_train_worker
        from ray.tune.trainable.trainable_fn_utils import _in_tune_session
        if _in_ray_train_worker():
            import ray.train
            from ray.train.collective import broadcast_from_rank_zero
            self.rank = ray.train.get_context().get_world_rank()
            self.report = ray.train.report
            self.broadcast = broadcast_from_rank_zero
            self.get_checkpoint = ray.train.get_checkpoint
            self.trial = None
        elif _in_tune_session():
            import ray.tune
            self.rank = 0
            self.report = ray.tune.report
            self.broadcast = lambda data: data
            self.get_checkpoint = ray.tune.get_checkpoint
            self.trial = ray.tune.get_context().get_trial_name()
            _let_training_end_on_stop()
        else:
            raise RuntimeError(_OUTSIDE_RAY.format(user=user))


def _let_training_end_on_stop():
    """Ray Tune stops a function trainable by waking its training thread (``report`` raises
    ``SystemExit(0)`` there) with ``session.finish(timeout=0)``, and kills the process as soon as
    that returns, before the training can end cleanly (its ``after_train``, ``status.json``, the
    trackers). The trial's session is made to wait for the training thread, ``_END_TIMEOUT_S`` at
    most, first."""
    from ray.train._internal.session import get_session
    session = get_session()
    if not isinstance(session.finish, _FinishAfterTraining):
        session.finish = _FinishAfterTraining(session.finish)


class _FinishAfterTraining:
    """A trial session's ``finish`` that gives the training thread ``_END_TIMEOUT_S`` to end."""

    def __init__(self, finish):
        self.finish = finish

    def __call__(self, timeout=None):
        return self.finish(None if timeout is None else max(timeout, _END_TIMEOUT_S))


def ray_checkpoint_dir():
    """The local directory of the checkpoint Ray restarts this run from, or None (a first run).

    It is the checkpoint a :class:`RayReportCallback` reported last (``ray.train.get_checkpoint()``
    in a Ray Train worker, ``ray.tune.get_checkpoint()`` in a Tune trial), downloaded when Ray's
    storage is not a local path. Give it to ``AutoResumeTrainConfig(resume_dir=...)``, on every
    worker, so that they all continue where the chief's checkpoint left off, step-exact.

    Example:
        >>> config = AutoResumeTrainConfig(model=MyModel(), data=data, max_epoch=10,
        ...                                callbacks=[ModelSaver(), RayReportCallback()],
        ...                                resume_dir=ray_checkpoint_dir())
    """
    checkpoint = _RaySession("ray_checkpoint_dir").get_checkpoint()
    if checkpoint is None:
        return None
    if type(checkpoint.filesystem).__name__ == "LocalFileSystem":
        return checkpoint.path
    return checkpoint.to_directory()


class RayReportCallback(Callback):
    """Report each epoch's stats, and the chief's newest checkpoint, to Ray Train or Ray Tune.

    At the end of every epoch every worker calls Ray's ``report`` with the same metrics: each
    scalar the chief's monitors received during the epoch or at its end (its latest value), with
    ``epoch_num`` and ``global_step``. The chief adds its newest checkpoint (a ``ModelSaver``'s)
    as a ``ray.train.Checkpoint`` holding that checkpoint's files, with its resume state when
    the config is an ``AutoResumeTrainConfig``; on a restart, ``ray_checkpoint_dir()`` hands it
    back to ``AutoResumeTrainConfig(resume_dir=...)``.

    It runs on every worker (Ray Train's ``report`` waits for all of them), so use the trainer
    of ``trainer_from_tf_config()`` (Ray's ``TensorflowTrainer`` writes ``TF_CONFIG``). List it
    after ``ModelSaver`` and the ``InferenceRunner`` s, whose results it reports.

    In a Ray Tune trial (a function trainable), a trial that Ray stops (a scheduler such as
    ASHA, a stopper) ends cleanly: training stops after the reported epoch, every
    ``after_train`` runs, ``status.json`` says ``stopped (Ray Tune stopped trial ... after
    epoch E)`` (``tfloop info``/``watch`` exit 0) and the trackers record a finished run with
    that reason; then ``launch_train_with_config`` raises Ray's ``SystemExit(0)`` again, which
    ends the trial as Ray expects.

    Needs ``pip install 'tfloop-train[ray]'``.

    Example:
        >>> def train_loop_per_worker(config):
        ...     logger.set_logger_dir(config["logdir"], action="keep")
        ...     train_config = AutoResumeTrainConfig(
        ...         model=MyModel(), data=DatasetInput(make_dataset), max_epoch=10,
        ...         callbacks=[ModelSaver(), RayReportCallback()],
        ...         resume_dir=ray_checkpoint_dir())
        ...     launch_train_with_config(train_config, trainer_from_tf_config())
        >>> TensorflowTrainer(train_loop_per_worker, train_loop_config={"logdir": "/tmp/run"},
        ...                   scaling_config=ray.train.ScalingConfig(num_workers=2)).fit()
    """

    _chief_only = False

    def __init__(self):
        import_extra("ray.train", "ray", "RayReportCallback")
        self._ray = None
        self._checkpoint = None
        self._reported_checkpoint = None
        self._epoch_start_step = 0
        self._stop = None
        self.reports = []

    def _setup_graph(self):
        self._check_order()
        self._ray = _RaySession(str(self))
        chief = self._ray.rank == 0
        if self.trainer.is_chief != chief:
            raise ValueError(
                f"{self}: Ray's rank 0 worker must be tfloop's chief, but this worker is Ray's "
                f"rank {self._ray.rank} and {'' if self.trainer.is_chief else 'not '}the chief of "
                f"{type(self.trainer).__name__}: train with trainer_from_tf_config() (Ray's "
                "TensorflowTrainer writes TF_CONFIG).")
        self.trainer.checkpoint_listeners.append(self._checkpoint_saved)

    def _check_order(self):
        in_order = self.trainer.callbacks_of(Callback)
        mine = next(i for i, cb in enumerate(in_order) if cb is self)
        late = [cb for cb in in_order[mine + 1:] if isinstance(cb, _REPORT_AFTER)]
        if late:
            raise ValueError(f"{self} is listed before {late[0]}, whose checkpoint or stats of an "
                             f"epoch it would report one epoch late: list {self} after it.")

    def _before_train(self):
        self._stop = None

    def _checkpoint_saved(self, prefix):
        self._checkpoint = prefix

    def _before_epoch(self):
        self._epoch_start_step = self.global_step

    def _trigger_epoch(self):
        # The checkpoint saved in this trigger round gets its resume state now (callbacks listed
        # after this one have nothing to add to an epoch's checkpoint).
        self.trainer.announce_checkpoints()
        metrics = self._ray.broadcast(self._epoch_metrics() if self._ray.rank == 0 else None)
        staged = self._stage_checkpoint()
        try:
            self._report(metrics, staged)
        finally:
            if staged is not None:
                shutil.rmtree(staged, ignore_errors=True)
        self.reports.append(metrics)

    def _epoch_metrics(self):
        monitors = self.trainer.monitors
        metrics = {}
        for name in monitors.scalar_names():
            step, value = monitors.get_history(name)[-1]
            if step > self._epoch_start_step:
                metrics[name] = value
        metrics.update(epoch_num=self.epoch_num, global_step=self.global_step)
        return metrics

    def _stage_checkpoint(self):
        """A local directory with the files of the chief's newest checkpoint not reported yet
        (Ray copies it into its storage during ``report``), or None."""
        prefix = self._checkpoint
        if not self.trainer.is_chief or prefix is None or prefix == self._reported_checkpoint:
            return None
        if not self.trainer.wait_for_checkpoint(prefix):
            logger.warning(f"{self}: checkpoint {prefix} failed to be written; this epoch's "
                           "report to Ray has no checkpoint.")
            self._reported_checkpoint = prefix
            return None
        directory, name = files.dirname(prefix), files.basename(prefix)
        staged = tempfile.mkdtemp(prefix="tfloop-ray-")
        try:
            for file_name in files.listdir(directory):
                if file_name.startswith(name + "."):
                    files.copy(files.join(directory, file_name), os.path.join(staged, file_name))
        except BaseException:
            shutil.rmtree(staged, ignore_errors=True)
            raise
        self._reported_checkpoint = prefix
        return staged

    def _report(self, metrics, staged):
        from ray.train import Checkpoint
        checkpoint = None if staged is None else Checkpoint.from_directory(staged)
        try:
            self._ray.report(metrics, checkpoint=checkpoint)
        except SystemExit as stop:
            if self._ray.trial is None or stop.code not in (0, None):
                raise
            self._stop = stop
            if self.epoch_num < self.trainer.max_epoch:
                raise StopTraining(f"Ray Tune stopped trial {self._ray.trial} after epoch "
                                   f"{self.epoch_num} (a scheduler or stopper decided)") from None

    def _after_train(self):
        if self._stop is None:
            return
        stop, self._stop = self._stop, None
        stop._tfloop_annotated = True  # a clean stop: no "exception in callback" error line
        stop._tfloop_clean_stop = True  # status.json: stopped (Ray Tune stopped trial ...)
        raise stop

    def __str__(self):
        return "RayReportCallback"
