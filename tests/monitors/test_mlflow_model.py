"""Models into MLflow's registry: an export wrapped in ``ServingModule`` logged with MLflow's own
``tensorflow`` flavour, and ``MLflowMonitor(log_model=...)`` at the end of training; each loaded
back with ``mlflow.pyfunc.load_model`` predicts as tfloop's predictor does. Against a real
``mlflow server`` on 127.0.0.1 over a sqlite store (the session's, tests/monitors/conftest.py),
each test in experiments and registered models of its own."""
import os

import numpy as np
import pytest
from export_support import ConvNet, images, train_convnet
from mlflow_support import only_run
from support import make_regression_data, train_linear

import tfloop


@pytest.fixture
def registry(server, monkeypatch):
    """MLflow's fluent API and registry on the session's server; ``(uri, client)``."""
    from mlflow.tracking import MlflowClient
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
    return server.uri, MlflowClient(server.uri)


@pytest.mark.slow
def test_an_export_logged_with_mlflows_flavour_and_registered_predicts_the_same(
        registry, tmp_path):
    import mlflow
    import mlflow.tensorflow
    checkpoint = train_convnet(str(tmp_path / "train_log"))
    config = tfloop.PredictConfig(model=ConvNet(), session_init=checkpoint, output_names=["prob"])
    export = tfloop.ModelExporter(config).export_serving_version(str(tmp_path / "export"))
    x, _ = images(5, seed=4)
    _, client = registry
    with mlflow.start_run(experiment_id=client.create_experiment("flavour")):
        info = mlflow.tensorflow.log_model(tfloop.ServingModule(export), name="model",
                                           registered_model_name="convnet", input_example=x[:2])
    assert str(info.registered_model_version) == "1"
    model = mlflow.pyfunc.load_model("models:/convnet/1")
    expected = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=ConvNet(), session_init=checkpoint, output_names=["prob"],
        input_names=["image"]))(x)[0]
    np.testing.assert_allclose(model.predict(x), expected, atol=1e-6)


def linear_weights(trainer):
    return trainer.final_weights["w"][:, 0]


@pytest.mark.slow
def test_the_monitor_logs_and_registers_the_final_model(registry, logdir):
    import mlflow
    uri, client = registry
    monitor = tfloop.MLflowMonitor(uri, "final-model", log_model="final",
                                   model_output_names=["pred"], registered_model_name="final")
    trainer = train_linear(monitors=[monitor], max_epoch=2)
    run = only_run(client, "final-model")
    assert run.info.status == "FINISHED"
    assert monitor.model_uri.startswith("models:/m-")
    [version] = client.search_model_versions("name='final'")
    assert version.run_id == run.info.run_id
    model_id = monitor.model_uri[len("models:/"):]
    assert client.get_logged_model(model_id).experiment_id == run.info.experiment_id
    x, _ = make_regression_data(4, seed=5)
    model = mlflow.pyfunc.load_model("models:/final/1")
    np.testing.assert_allclose(model.predict(x), x @ linear_weights(trainer), rtol=1e-6)
    assert model.metadata.get_input_schema().input_types() == [np.dtype("float32")]
    assert mlflow.get_tracking_uri() == uri  # as the test set it: from MLFLOW_TRACKING_URI


class PutError(tfloop.Callback):
    """Puts ``val-error`` at each epoch's end: best at epoch 2 (global step 6) of 3."""

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("val-error", [3.0, 1.0, 2.0][self.epoch_num - 1])


@pytest.mark.slow
def test_the_monitor_logs_the_best_checkpoint(registry, logdir):
    import mlflow
    uri, _ = registry
    monitor = tfloop.MLflowMonitor(uri, "best-model", log_model="best",
                                   model_output_names=["pred"])
    trainer = train_linear([tfloop.ModelSaver(), PutError(), tfloop.MinSaver("val-error")],
                           monitors=[monitor], max_epoch=3)
    best = tfloop.load_chkpt_vars(os.path.join(logdir, "model-6"))["w"][:, 0]
    assert not np.allclose(best, linear_weights(trainer))
    x, _ = make_regression_data(4, seed=6)
    np.testing.assert_allclose(mlflow.pyfunc.load_model(monitor.model_uri).predict(x), x @ best,
                               rtol=1e-6)


class Fails(tfloop.Callback):
    def _trigger_epoch(self):
        raise RuntimeError("boom")


@pytest.mark.slow
def test_a_failed_training_logs_no_model(store, logdir, log_lines):
    uri, client = store
    monitor = tfloop.MLflowMonitor(uri, "exp", log_model="final", model_output_names=["pred"])
    with pytest.raises(RuntimeError, match="boom"):
        train_linear([Fails()], monitors=[monitor], max_epoch=2)
    assert only_run(client).info.status == "FAILED"
    assert monitor.model_uri is None
    assert "MLflowMonitor: training failed; the model is not logged." in log_lines


def test_model_options_are_checked_when_the_monitor_is_made(store):
    uri, _ = store
    with pytest.raises(ValueError, match="log_model must be None, 'final' or 'best', got 'last'"):
        tfloop.MLflowMonitor(uri, log_model="last", model_output_names=["pred"])
    with pytest.raises(TypeError, match="model_output_names must be a non-empty list of tensor "
                                        "names"):
        tfloop.MLflowMonitor(uri, log_model="final", model_output_names="pred")
    with pytest.raises(TypeError, match="model_output_names, registered_model_name apply to the "
                                        "model logged with log_model="):
        tfloop.MLflowMonitor(uri, model_output_names=["pred"], registered_model_name="m")


def test_an_output_the_model_lacks_is_an_error_before_training(store, logdir):
    uri, client = store
    monitor = tfloop.MLflowMonitor(uri, "exp", log_model="final", model_output_names=["prob"])
    with pytest.raises(KeyError, match="output_names: no tensor named 'prob'"):
        train_linear(monitors=[monitor], max_epoch=1)
    assert client.search_runs([client.get_experiment_by_name("exp").experiment_id]) == []


@pytest.mark.slow
def test_a_model_mlflow_cannot_take_costs_a_warning(store, logdir, log_warnings, monkeypatch):
    import mlflow.tensorflow
    uri, client = store

    def refuse(*args, **kwargs):
        raise OSError("the artifact store is read-only")
    monkeypatch.setattr(mlflow.tensorflow, "log_model", refuse)
    monitor = tfloop.MLflowMonitor(uri, "exp", log_model="final", model_output_names=["pred"])
    train_linear(monitors=[monitor], max_epoch=1)
    assert only_run(client).info.status == "FINISHED"
    assert monitor.model_uri is None
    assert (f"MLflowMonitor: the final model could not be logged to {uri} (OSError: the "
            "artifact store is read-only). Training is unaffected.") in log_warnings


@pytest.mark.slow
def test_a_server_that_stops_answering_costs_the_flush_timeout_at_most(
        server, logdir, log_warnings, monkeypatch):
    """The session's server is paused (SIGSTOP) while the model is logged, and resumed after."""
    import time
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")

    class PauseAtTheEnd(tfloop.Callback):
        def _after_train(self):
            server.pause()
    monitor = tfloop.MLflowMonitor(server.uri, "paused-model", log_model="final",
                                   model_output_names=["pred"], flush_timeout=5)
    try:
        start = time.monotonic()
        train_linear([PauseAtTheEnd()], monitors=[monitor], max_epoch=1)
        assert time.monotonic() - start < 60
    finally:
        server.resume()
    assert monitor.model_uri is None
    assert any(f"logging the final model to {server.uri} did not end within 5 s" in w
               for w in log_warnings)


def test_best_without_a_kept_checkpoint_costs_a_warning(store, logdir, log_warnings):
    uri, client = store
    monitor = tfloop.MLflowMonitor(uri, "exp", log_model="best", model_output_names=["pred"])
    train_linear(monitors=[monitor], max_epoch=1)
    assert only_run(client).info.status == "FINISHED"
    assert (f"MLflowMonitor: the best model could not be exported (LookupError: "
            f"log_model='best' needs one best checkpoint in {logdir} (MinSaver/MaxSaver); kept: "
            "none); it is not logged. Training is unaffected.") in log_warnings
