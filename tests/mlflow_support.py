"""Real MLflow tracking stores for the tests: a sqlite store, and an ``mlflow server`` on
127.0.0.1 that a test can stop, pause (SIGSTOP), resume and start again."""
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from support import scaled_timeout

from tfloop.monitors.mlflow_monitor import check_reachable


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def history(client, run_id, key):
    """``[(step, value)]`` of metric ``key`` of the run, oldest first."""
    return [(m.step, m.value) for m in client.get_metric_history(run_id, key)]


def only_run(client, experiment="exp"):
    runs = client.search_runs([client.get_experiment_by_name(experiment).experiment_id])
    assert len(runs) == 1, [r.info.run_id for r in runs]
    return runs[0]


class TrackingServer:
    """An ``mlflow server`` on 127.0.0.1 over the sqlite store ``backend``, in its own process
    group so that stopping or pausing it stops its workers too."""

    def __init__(self, backend, tmp_path):
        self.backend, self.tmp_path, self.port = backend, tmp_path, free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--host", "127.0.0.1", "--port",
             str(self.port), "--backend-store-uri", self.backend, "--workers", "1",
             "--default-artifact-root", str(self.tmp_path / "artifacts")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            # Without MLflow's job runner (a process of its own, which the tests do not use and
            # whose start-up competes for the CPU with the server's): the server answers sooner.
            env=dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"))
        deadline = time.monotonic() + scaled_timeout(60)
        while time.monotonic() < deadline:
            try:
                check_reachable(self.uri, timeout=1.0)
                break
            except ConnectionError:
                if self.process.poll() is not None:
                    raise RuntimeError("mlflow server exited at start") from None
                time.sleep(0.2)
        else:
            raise TimeoutError(f"mlflow server did not answer at {self.uri}")
        # The first request is the slow one: made here, not by a test with short timeouts.
        request = urllib.request.Request(
            f"{self.uri}/api/2.0/mlflow/experiments/search", data=b'{"max_results": 1}',
            headers={"Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=scaled_timeout(60)).close()

    @property
    def pgid(self):
        return self.process.pid

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.resume()
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(scaled_timeout(30))

    def pause(self):
        os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self):
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGCONT)
