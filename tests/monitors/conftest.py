"""Fixtures of the monitor tests: real MLflow tracking stores."""
import shutil

import pytest


@pytest.fixture(scope="session")
def template_store(tmp_path_factory):
    """An empty sqlite tracking store, created once (MLflow's migrations take seconds)."""
    from mlflow.tracking import MlflowClient
    path = tmp_path_factory.mktemp("mlflow") / "template.db"
    MlflowClient(f"sqlite:///{path}").search_experiments()
    return path


@pytest.fixture
def store(template_store, tmp_path):
    """``(uri, client)`` of a fresh sqlite tracking store."""
    from mlflow.tracking import MlflowClient
    path = tmp_path / "mlflow.db"
    shutil.copy(template_store, path)
    uri = f"sqlite:///{path}"
    return uri, MlflowClient(uri)


@pytest.fixture(scope="session")
def server(template_store, tmp_path_factory):
    """An ``mlflow server`` on 127.0.0.1 over a store of its own, started once for the session
    (a start takes seconds); a test that pauses or stops it leaves it running again, and each
    test logs into experiments of its own."""
    from mlflow_support import TrackingServer
    directory = tmp_path_factory.mktemp("mlflow-server")
    shutil.copy(template_store, directory / "mlflow.db")
    server = TrackingServer(f"sqlite:///{directory / 'mlflow.db'}", directory)
    server.start()
    yield server
    server.stop()
