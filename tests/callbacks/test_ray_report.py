"""RayReportCallback with a real Ray on this machine (a local cluster on 127.0.0.1): Ray Train's
TensorflowTrainer running two tfloop workers, a restart that resumes from Ray's checkpoint, and
Ray Tune stopping a trial."""
import glob
import json
import os
import re
import signal

import numpy as np
import pytest
import ray_support
from support import LinearModel, scaled_timeout, train_linear

import tfloop
from tfloop.compat import tf, tfv1

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_outside_ray_it_says_where_it_runs():
    with pytest.raises(RuntimeError, match=r"RayReportCallback runs inside Ray: in the "
                                           r"train_loop_per_worker of a ray\.train\.tensorflow"):
        train_linear([tfloop.RayReportCallback()])


def test_it_must_come_after_the_callbacks_whose_results_it_reports(tmp_path):
    tfloop.logger.set_logger_dir(str(tmp_path), action="keep")
    with pytest.raises(ValueError, match=r"RayReportCallback is listed before ModelSaver, whose "
                                         r"checkpoint or stats of an epoch it would report one "
                                         r"epoch late: list RayReportCallback after it\."):
        train_linear([tfloop.RayReportCallback(), tfloop.ModelSaver()])


def test_ray_checkpoint_dir_outside_ray_says_where_it_runs():
    with pytest.raises(RuntimeError, match="ray_checkpoint_dir runs inside Ray"):
        tfloop.ray_checkpoint_dir()


def test_resume_dir_must_be_a_directory(tmp_path):
    with pytest.raises(ValueError, match=r"resume_dir='.*nowhere' is not a directory"):
        tfloop.AutoResumeTrainConfig(model=LinearModel(), data=ray_support.dataset(8),
                                     resume_dir=str(tmp_path / "nowhere"))


@pytest.fixture(scope="module")
def local_ray():
    """A Ray cluster of this machine on 127.0.0.1 (2 CPUs, no dashboard), stopped at the end.
    Its workers import this tfloop and the tests' support modules, and give TensorFlow's servers
    loopback addresses in TF_CONFIG."""
    import ray
    from ray._private import ray_constants
    saved = {name: os.environ.get(name) for name in
             ("PYTHONPATH", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(TESTS), TESTS] + [p for p in [saved["PYTHONPATH"]] if p])
    # Ray's single-machine mode: without it Ray replaces 127.0.0.1 by the machine's network
    # address, here (read when the call is made) and in the workers (read when they import ray).
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    cluster_mode, ray_constants.ENABLE_RAY_CLUSTER = ray_constants.ENABLE_RAY_CLUSTER, False
    # ray.init installs a SIGTERM handler of its own that ray.shutdown leaves in place.
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        ray_constants.ENABLE_RAY_CLUSTER = cluster_mode
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _reports(tmp, rank):
    """What each process of worker ``rank`` reported, in the order the attempts ran."""
    found = []
    for path in glob.glob(os.path.join(tmp, f"reports-{rank}-*.json")):
        with open(path) as f:
            found.append((os.path.getmtime(path), json.load(f)))
    return [record for _, record in sorted(found, key=lambda item: item[0])]


class KeepWeights(tfloop.Callback):
    def _after_train(self):
        with self.trainer.graph.as_default():
            w, = [v for v in tfv1.global_variables() if v.op.name == "w"]
        self.w = self.trainer.sess.run(w)


def _single_process_weights(max_epoch):
    """w after ``max_epoch`` epochs in one process on the batches of 16 that the two workers take
    together (worker i: batch 2s + i of 8 at step s)."""
    keep = KeepWeights()
    config = tfloop.TrainConfig(model=LinearModel(), data=ray_support.dataset(16),
                                steps_per_epoch=ray_support.STEPS_PER_EPOCH, max_epoch=max_epoch,
                                callbacks=[keep], extra_callbacks=[], monitors=[])
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    return keep.w


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(300))
def test_two_workers_report_every_epoch_and_a_restart_resumes_from_rays_checkpoint(
        local_ray, tmp_path):
    import ray.train
    from ray.train.tensorflow import TensorflowTrainer
    tmp = str(tmp_path)
    trainer = TensorflowTrainer(
        ray_support.train_loop_per_worker,
        train_loop_config={"logdir": os.path.join(tmp, "log"), "tmp": tmp, "max_epoch": 3,
                           "fail_after": 2},
        scaling_config=ray.train.ScalingConfig(num_workers=2,
                                               resources_per_worker={"CPU": 0.5}),
        run_config=ray.train.RunConfig(storage_path=os.path.join(tmp, "ray"), name="run",
                                       failure_config=ray.train.FailureConfig(max_failures=1)))
    result = trainer.fit()
    assert result.error is None

    # The first attempt: both workers reported epochs 1 and 2 with the chief's stats, then worker
    # 1 failed; the second resumed from Ray's checkpoint of epoch 2, step-exact, and trained 3.
    chief, other = _reports(tmp, 0), _reports(tmp, 1)
    assert [r["resumed_from"] for r in chief] == [None, "model-8"]
    assert [r["resumed_from"] for r in other] == [None, "model-8"]
    assert chief == other
    reports = [r for attempt in chief for r in attempt["reports"]]
    assert [(r["epoch_num"], r["global_step"]) for r in reports] == [(1, 4), (2, 8), (3, 12)]
    assert all(isinstance(r["cost"], float) for r in reports)
    assert result.metrics["epoch_num"] == 3 and result.metrics["cost"] == reports[-1]["cost"]

    # Ray's checkpoint: the chief's files of step 12, with the resume state.
    with result.checkpoint.as_directory() as directory:
        names = sorted(os.listdir(directory))
        assert "model-12.index" in names and "model-12.resume.json" in names, names
        weights = tf.train.load_checkpoint(os.path.join(directory, "model-12")).get_tensor("w")
    np.testing.assert_allclose(weights, _single_process_weights(3), rtol=1e-5)


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(300))
def test_a_trial_that_a_scheduler_stops_is_stopped_in_its_log_dir_and_tracker(
        local_ray, tmp_path, capsys):
    import mlflow
    from ray import tune
    from ray.tune.schedulers import ASHAScheduler

    from tfloop.cli import main
    tmp = str(tmp_path)
    uri = f"sqlite:///{tmp}/mlflow.db"
    # One trial after the other: ASHA lets the first (lr 0.1) run to max_t, and stops the second
    # (lr 0.001, a higher cost) at its first rung, after epoch 1.
    tuner = tune.Tuner(
        ray_support.tune_trial,
        param_space={"tmp": tmp, "mlflow": uri, "max_epoch": 3,
                     "lr": tune.grid_search([0.1, 0.001])},
        tune_config=tune.TuneConfig(
            metric="cost", mode="min", max_concurrent_trials=1,
            scheduler=ASHAScheduler(grace_period=1, max_t=3, reduction_factor=2)),
        run_config=tune.RunConfig(storage_path=os.path.join(tmp, "ray"), name="tune",
                                  verbose=0))
    results = tuner.fit()
    assert results.errors == []
    iterations = sorted((r.config["lr"], r.metrics["training_iteration"]) for r in results)
    assert iterations == [(0.001, 1), (0.1, 3)]

    finished, stopped = (os.path.join(tmp, f"trial-lr{lr}") for lr in (0.1, 0.001))
    assert tfloop.utils.read_run_status(finished).describe() == "finished"
    status = tfloop.utils.read_run_status(stopped)
    assert status.state == "stopped"
    assert re.fullmatch(r"Ray Tune stopped trial tune_trial_\w+ after epoch 1 \(a scheduler or "
                        r"stopper decided\)", status.reason), status.reason
    capsys.readouterr()
    assert main(["info", stopped]) == 0
    assert f"status         stopped ({status.reason})" in capsys.readouterr().out
    assert main(["watch", stopped]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"The run stopped ({status.reason})."

    client = mlflow.MlflowClient(uri)
    runs = {run.info.run_name: run for run in client.search_runs(
        [client.get_experiment_by_name("tune").experiment_id])}
    assert {name: run.info.status for name, run in runs.items()} == {
        "lr0.1": "FINISHED", "lr0.001": "FINISHED"}
    assert runs["lr0.001"].data.tags["tfloop.stop_reason"] == status.reason
    assert "tfloop.stop_reason" not in runs["lr0.1"].data.tags
