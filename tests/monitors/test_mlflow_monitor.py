"""MLflowMonitor against real tracking stores, read back through MLflow's own client."""
import json
import os
import signal

import pytest
from mlflow_support import free_port, history, only_run
from support import LinearModel, batches, make_regression_data, train_linear

import tfloop
from tfloop.monitors.mlflow_monitor import check_reachable


def test_an_unreachable_server_is_an_error_naming_it():
    uri = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ConnectionError, match=f"the tracking server {uri} cannot be reached"):
        check_reachable(uri, timeout=1.0)


def test_a_sqlite_store_in_a_missing_directory_is_an_error(tmp_path):
    uri = f"sqlite:///{tmp_path}/nowhere/mlflow.db"
    with pytest.raises(ValueError, match="does not exist; create it"):
        check_reachable(uri)


class PutStep(tfloop.Callback):
    """Puts ``step`` (the global step) after every step and raises ``error`` after step ``at``."""

    _chief_only = False

    def __init__(self, at=None, error=None):
        self.at, self.error = at, error

    def _trigger_step(self):
        self.trainer.monitors.put_scalar("step", self.global_step)
        if self.global_step == self.at:
            if isinstance(self.error, int):
                os.kill(os.getpid(), self.error)
            else:
                raise self.error


@pytest.mark.slow
def test_metrics_at_the_global_step_params_tags_and_finished(store, logdir):
    uri, client = store
    monitor = tfloop.MLflowMonitor(uri, "exp", "first", params={"lr": 0.1, "arch": "linear"})
    train_linear([PutStep()], monitors=[monitor], max_epoch=2)
    run = only_run(client)
    assert run.info.run_id == monitor.run_id
    assert (run.info.status, run.info.run_name) == ("FINISHED", "first")
    assert run.data.params == {"lr": "0.1", "arch": "linear"}
    assert run.data.tags["tfloop.logdir"] == os.path.abspath(logdir)
    assert run.data.tags["tfloop.version"] == tfloop.__version__
    assert history(client, run.info.run_id, "step") == [(s, float(s)) for s in range(1, 7)]
    with open(os.path.join(logdir, "mlflow_run.json")) as f:
        assert json.load(f) == {"run_id": monitor.run_id, "tracking_uri": uri}


def train_resumable(uri, callbacks, max_epoch):
    x, y = make_regression_data(12)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=max_epoch,
        callbacks=[tfloop.ModelSaver()] + callbacks, extra_callbacks=[],
        monitors=[tfloop.MLflowMonitor(uri, "exp")])
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())


@pytest.mark.slow
def test_failed_then_resumed_into_the_same_run_no_step_twice_then_killed(store, logdir):
    uri, client = store
    with pytest.raises(RuntimeError, match="boom"):
        train_resumable(uri, [PutStep(at=5, error=RuntimeError("boom"))], max_epoch=3)
    run = only_run(client)
    assert run.info.status == "FAILED"
    assert [s for s, _ in history(client, run.info.run_id, "step")] == [1, 2, 3, 4, 5]
    # Resumed from the checkpoint of step 3: steps 4 and 5 are trained again, not logged again.
    with pytest.raises(SystemExit):
        train_resumable(uri, [PutStep(at=7, error=signal.SIGTERM)], max_epoch=3)
    run = only_run(client)
    assert run.info.status == "KILLED"
    assert [s for s, _ in history(client, run.info.run_id, "step")] == list(range(1, 8))
    train_resumable(uri, [PutStep()], max_epoch=3)
    run = only_run(client)
    assert run.info.status == "FINISHED"
    assert [s for s, _ in history(client, run.info.run_id, "step")] == list(range(1, 10))


@pytest.mark.slow
def test_a_new_training_in_the_log_dir_starts_a_new_run(store, logdir):
    uri, client = store
    first, second = tfloop.MLflowMonitor(uri, "exp"), tfloop.MLflowMonitor(uri, "exp")
    train_linear([PutStep()], monitors=[first], max_epoch=1)
    train_linear([PutStep()], monitors=[second], max_epoch=1)
    assert first.run_id != second.run_id


class ServerOutage(tfloop.Callback):
    """Stops the server before epoch 2 and starts it again before epoch 3."""

    def __init__(self, server):
        self.server = server

    def _before_epoch(self):
        if self.epoch_num == 2:
            self.server.stop()
        elif self.epoch_num == 3:
            self.server.start()


@pytest.mark.slow
def test_a_real_server_going_away_mid_run_costs_a_warning_and_no_metric(
        server, logdir, monkeypatch, log_warnings):
    """On the session's server (tests/monitors/conftest.py), which this test stops and starts
    again; its runs go to an experiment no other test uses."""
    from mlflow.tracking import MlflowClient
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")
    client = MlflowClient(server.backend)
    try:
        monitor = tfloop.MLflowMonitor(server.uri, "outage", params={"lr": 0.1})
        train_linear([PutStep(), ServerOutage(server)], monitors=[monitor], max_epoch=3)
        run = only_run(client, "outage")
        assert run.info.status == "FINISHED"
        assert history(client, run.info.run_id, "step") == [(s, float(s)) for s in range(1, 10)]
        assert any(f"could not send metrics to {server.uri}" in w for w in log_warnings)
    finally:
        if server.process.poll() is not None:   # left stopped by a failure: start it again
            server.start()


class PutScalarSummary(tfloop.Callback):
    """Puts TensorBoard's tensor-valued scalar summary ``acc`` = epoch / 4 each epoch."""

    def _trigger_epoch(self):
        from tensorboard.summary import v1
        self.trainer.monitors.put_summary(v1.scalar_pb("acc", self.epoch_num / 4))


@pytest.mark.slow
def test_a_tensor_valued_scalar_summary_is_a_metric(store, logdir):
    uri, client = store
    train_linear([PutScalarSummary()], monitors=[tfloop.MLflowMonitor(uri, "exp")], max_epoch=2)
    run = only_run(client)
    assert history(client, run.info.run_id, "acc/scalar_summary") == [(3, 0.25), (6, 0.5)]
