"""What Ray's workers and trials run in the Ray tests: a tiny tfloop training with
RayReportCallback, importable by Ray's worker processes (the tests put this directory on their
PYTHONPATH)."""
import json
import os
import time

import numpy as np
from support import LinearModel, scaled_timeout

import tfloop
from tfloop.compat import tf
from tfloop.train.cluster import shard_dataset
from tfloop.train.distributed import trainer_from_tf_config
from tfloop.utils import logger

STEPS_PER_EPOCH = 4
BATCH = 8                   # per worker; two workers train on batches of 16 together
N = 2 * BATCH * STEPS_PER_EPOCH


def make_data():
    rng = np.random.RandomState(0)
    x = rng.rand(N, 3).astype("float32")
    return x, x @ np.array([1.0, -2.0, 0.5], "float32")


def dataset(batch):
    return tf.data.Dataset.from_tensor_slices(make_data()).batch(batch)


class FailOnce(tfloop.Callback):
    """On worker 1, fail after epoch ``epoch`` unless ``marker`` exists (it creates it), once Ray
    registered the checkpoints of ``epoch`` epochs (its checkpoint manager's snapshot,
    ``snapshot``, lists them): a failure seen before the chief's report of the epoch was
    registered would restart from the checkpoint before it."""

    _chief_only = False

    def __init__(self, marker, epoch, snapshot):
        self.marker, self.epoch, self.snapshot = marker, epoch, snapshot

    def _trigger_epoch(self):
        if self.trainer.rank == 1 and self.epoch_num == self.epoch and \
                not os.path.exists(self.marker):
            deadline = time.monotonic() + scaled_timeout(60)
            while self._registered() < self.epoch and time.monotonic() < deadline:
                time.sleep(0.1)
            open(self.marker, "w").close()
            raise RuntimeError("worker 1 fails once")

    def _registered(self):
        try:
            with open(self.snapshot) as f:
                return len(json.load(f)["checkpoint_results"])
        except (OSError, ValueError, KeyError):
            return 0


class RecordReports(tfloop.Callback):
    """Writes what ``report`` reported so far into ``<tmp>/reports-<rank>-<pid>.json`` after each
    epoch (a worker that Ray stops gets no chance to write at the end)."""

    _chief_only = False

    def __init__(self, tmp, report):
        self.tmp, self.report, self.resumed_from = tmp, report, None

    def _trigger_epoch(self):
        path = os.path.join(self.tmp, f"reports-{self.trainer.rank}-{os.getpid()}.json")
        with open(path, "w") as f:
            json.dump({"resumed_from": self.resumed_from, "reports": self.report.reports}, f)


def train_loop_per_worker(config):
    """Ray Train's train loop: two workers of tfloop's multi-worker trainer (TF_CONFIG by Ray),
    resumed from Ray's checkpoint after a restart."""
    logger.set_logger_dir(config["logdir"], action="keep")
    report = tfloop.RayReportCallback()
    record = RecordReports(config["tmp"], report)
    train_config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(lambda: shard_dataset(dataset(BATCH))),
        steps_per_epoch=STEPS_PER_EPOCH, max_epoch=config["max_epoch"],
        callbacks=[tfloop.ModelSaver(), report, record,
                   FailOnce(os.path.join(config["tmp"], "failed"), config["fail_after"],
                            os.path.join(config["tmp"], "ray", "run",
                                         "checkpoint_manager_snapshot.json"))],
        resume_dir=tfloop.ray_checkpoint_dir())
    if train_config.resume_from is not None:
        record.resumed_from = os.path.basename(train_config.resume_from)
    tfloop.launch_train_with_config(train_config, trainer_from_tf_config(gpus=1))


def tune_trial(config):
    """A Ray Tune function trainable: one tfloop training per trial, in its own log directory,
    with an MLflow run."""
    logdir = os.path.join(config["tmp"], f"trial-lr{config['lr']}")
    logger.set_logger_dir(logdir, action="keep")
    monitors = tfloop.DEFAULT_MONITORS() + [
        tfloop.MLflowMonitor(config["mlflow"], "tune", run_name=f"lr{config['lr']}")]
    train_config = tfloop.TrainConfig(
        model=LinearModel(config["lr"]), data=dataset(2 * BATCH), steps_per_epoch=STEPS_PER_EPOCH,
        max_epoch=config["max_epoch"], callbacks=[tfloop.RayReportCallback()],
        monitors=monitors)
    tfloop.launch_train_with_config(train_config, tfloop.SimpleTrainer())
