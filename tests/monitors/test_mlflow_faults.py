"""MLflowMonitor when things go wrong: names MLflow refuses, a run deleted in MLflow, a server that
stops answering at the end of training or during a SIGTERM, and a kill -9 between a checkpoint and
the send of its metrics. Against real stores: sqlite, and an ``mlflow server`` on 127.0.0.1."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from forked_python import run_python
from mlflow_support import history, only_run
from support import LinearModel, batches, make_regression_data, scaled_timeout, train_linear

import tfloop
from tfloop.monitors import mlflow_monitor
from tfloop.monitors.mlflow_names import legal_key

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LONG = "x" * 251


@pytest.mark.parametrize("name,match", [
    ("acc@1", r"MLflow refuses the param name 'acc@1': it contains @ .*; rename it, e\.g\. "
              r"'acc_1'\."),
    (LONG, "it is longer than 250 characters; give it a shorter name"),
    ("a//b", "it resolves to another path .*e\\.g\\. 'a__b'"),
])
def test_a_param_name_mlflow_refuses_is_an_error_when_the_monitor_is_made(name, match):
    with pytest.raises(ValueError, match=match):
        tfloop.MLflowMonitor("sqlite:///mlflow.db", params={name: 1})


def test_legal_forms_of_refused_names():
    assert legal_key("PeakMemory(MB)/gpu:0") == "PeakMemory_MB_/gpu:0"
    assert legal_key("/abs") == "_abs"
    assert legal_key(LONG) is None
    assert legal_key("cost") == "cost"


class PutNames(tfloop.Callback):
    """Puts the global step under each of ``names`` after every step."""

    _chief_only = False

    def __init__(self, *names):
        self.names = names

    def _trigger_step(self):
        for name in self.names:
            self.trainer.monitors.put_scalar(name, self.global_step)


STEPS = [(s, float(s)) for s in range(1, 7)]


@pytest.mark.slow
def test_only_a_refused_metric_name_is_lost_with_one_warning(store, logdir, log_warnings):
    uri, client = store
    names = ("acc@1", LONG, "PeakMemory(MB)/gpu:0", "step")
    train_linear([PutNames(*names)], monitors=[tfloop.MLflowMonitor(uri, "exp")], max_epoch=2)
    run = only_run(client)
    assert sorted(run.data.metrics) == ["PeakMemory_MB_/gpu:0", "acc_1", "step"]
    for key in run.data.metrics:
        assert history(client, run.info.run_id, key) == STEPS
    refused = [w for w in log_warnings if "MLflow refuses the metric name" in w]
    assert refused == [
        "MLflowMonitor: MLflow refuses the metric name 'acc@1' (it contains @ (MLflow allows "
        "letters, digits, _ - . / : and spaces)); it is logged as 'acc_1'.",
        f"MLflowMonitor: MLflow refuses the metric name '{LONG}' (it is longer than 250 "
        "characters); its values are not logged.",
        "MLflowMonitor: MLflow refuses the metric name 'PeakMemory(MB)/gpu:0' (it contains ( ) "
        "(MLflow allows letters, digits, _ - . / : and spaces)); it is logged as "
        "'PeakMemory_MB_/gpu:0'."]
    assert run.info.status == "FINISHED"


@pytest.mark.slow
def test_a_name_the_store_refuses_costs_that_name_only(store, logdir, log_warnings, monkeypatch):
    """A name the client takes for legal (another MLflow version's rules) but the store refuses:
    the batch is sent again name by name, and only that name is dropped."""
    monkeypatch.setattr(mlflow_monitor, "key_problem", lambda name: None)
    uri, client = store
    train_linear([PutNames("acc@1", "step")], monitors=[tfloop.MLflowMonitor(uri, "exp")],
                 max_epoch=2)
    run = only_run(client)
    assert list(run.data.metrics) == ["step"]
    assert history(client, run.info.run_id, "step") == STEPS
    refused = [w for w in log_warnings if "refuses the metric name" in w]
    assert len(refused) == 1 and refused[0].startswith(
        "MLflowMonitor: MLflow refuses the metric name 'acc@1' (") and \
        refused[0].endswith("); its values are not logged. The other metrics are.")


@pytest.mark.slow
def test_a_run_that_cannot_start_logging_is_failed_not_running(store, logdir):
    uri, client = store
    os.makedirs(os.path.join(logdir, "mlflow_run.json"))  # the run file cannot be written
    with pytest.raises(OSError):
        train_linear([], monitors=[tfloop.MLflowMonitor(uri, "exp")], max_epoch=1)
    assert only_run(client).info.status == "FAILED"


def train_resumable(uri, callbacks, max_epoch, **monitor_kwargs):
    x, y = make_regression_data(12)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=max_epoch,
        callbacks=[tfloop.ModelSaver()] + callbacks, extra_callbacks=[],
        monitors=[tfloop.MLflowMonitor(uri, "exp", **monitor_kwargs)])
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())


@pytest.mark.slow
def test_resuming_into_a_run_deleted_in_mlflow_starts_a_new_run(store, logdir, log_warnings):
    uri, client = store
    train_resumable(uri, [PutNames("step")], max_epoch=1)
    deleted = only_run(client).info.run_id
    client.delete_run(deleted)
    train_resumable(uri, [PutNames("step")], max_epoch=2)
    run = only_run(client)  # search_runs lists active runs only
    assert run.info.run_id != deleted and run.info.status == "FINISHED"
    assert history(client, run.info.run_id, "step") == [(s, float(s)) for s in range(4, 7)]
    assert any(f"run {deleted} of {uri}, named in mlflow_run.json, was deleted in MLflow; "
               "logging into a new run from global step 3 on" in w for w in log_warnings)


SCRIPT = """
import os, signal, sqlite3, sys, threading
sys.path.insert(0, {tests!r})
import tfloop
from support import LinearModel, batches, make_regression_data
from tfloop.utils import logger

MODE, PGID = {mode!r}, {pgid}


class Faults(tfloop.Callback):
    _chief_only = False

    def _before_epoch(self):
        if self.epoch_num == 2 and MODE == "kill":   # the store takes no write until kill -9
            # (once the send of epoch 1's metrics, which may still hold the store, is done)
            self.lock = sqlite3.connect({db!r}, timeout=60, isolation_level=None)
            self.lock.execute("BEGIN EXCLUSIVE")
        elif self.epoch_num == 2 and MODE != "resume":
            os.killpg(PGID, signal.SIGSTOP)   # the server stops answering

    def _trigger_step(self):
        self.trainer.monitors.put_scalar("step", self.global_step)
        if self.global_step == 7 and MODE == "kill":   # model-6 and its resume state are saved
            os.kill(os.getpid(), signal.SIGKILL)
        if self.global_step == 5 and MODE in ("sigterm", "twice"):
            os.kill(os.getpid(), signal.SIGTERM)
            if MODE == "twice":
                threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()


logger.set_logger_dir({logdir!r}, action="keep")
x, y = make_regression_data(12)
config = tfloop.AutoResumeTrainConfig(
    model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=3,
    callbacks=[tfloop.ModelSaver(), Faults()], extra_callbacks=[],
    monitors=[tfloop.MLflowMonitor({uri!r}, {experiment!r}{flush_timeout})])
tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
print("launch returned", flush=True)
"""


def script(tmp_path, mode, uri, experiment="exp", pgid=None, flush_timeout=2.0):
    path = tmp_path / f"train_{mode}.py"
    db = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else None
    path.write_text(textwrap.dedent(SCRIPT.format(
        tests=TESTS_DIR, mode=mode, pgid=pgid, db=db, uri=uri, experiment=experiment,
        logdir=str(tmp_path / "train_log"),
        flush_timeout="" if flush_timeout is None else f", flush_timeout={flush_timeout}")))
    return str(path)


@pytest.fixture
def paused_server(server):
    """The module's server, resumed at the end of the test whatever the test did to it."""
    yield server
    server.resume()


def run_interpreter(path):
    """``python path`` in a fresh interpreter (whose exit waits for non-daemon threads)."""
    return subprocess.run([sys.executable, path], capture_output=True, text=True,
                          timeout=scaled_timeout(90))


@pytest.mark.slow
@pytest.mark.parametrize("mode,code", [("end", 0), ("sigterm", 143)])
def test_a_server_that_stops_answering_costs_the_flush_timeout_at_most(
        tmp_path, paused_server, mode, code):
    """Bugs 2 and 3: the end of training (or of a SIGTERM) waits ``flush_timeout`` in all for the
    metrics and the run's status, then the process exits: the sender thread is a daemon."""
    done = run_interpreter(script(tmp_path, mode, paused_server.uri, f"end-{mode}",
                                  paused_server.pgid))
    output = done.stdout + done.stderr
    assert done.returncode == code, output[-3000:]
    assert "did not answer within 2 s at the end of training" in output
    if mode == "end":   # epoch 2's send is still stuck at the end of epoch 3
        assert f"sending metrics to {paused_server.uri} has taken" in output
        assert "launch returned" in output


@pytest.mark.slow
def test_a_second_sigterm_ends_the_process_at_once(tmp_path, paused_server):
    """The first SIGTERM's stop waits for a server that does not answer (for up to an hour
    here); the second one ends the process."""
    done = run_interpreter(script(tmp_path, "twice", paused_server.uri, "twice",
                                  paused_server.pgid, flush_timeout=3600))
    output = done.stdout + done.stderr
    assert done.returncode == 143, output[-3000:]
    assert "SIGTERM received again: stopping at once." in output


@pytest.mark.slow
def test_kill_9_then_resume_logs_every_step_exactly_once(tmp_path, store):
    """Bug 4: epoch 2's metrics were not sent (the store was locked) when model-6 was saved and
    the process was killed with kill -9 at step 7; the resumed training sends them from the
    checkpoint's resume state, then logs steps 7-9."""
    uri, client = store
    env = dict(os.environ)
    killed = run_python([script(tmp_path, "kill", uri, flush_timeout=None)], tmp_path, env,
                        scaled_timeout(60))
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:] + killed.stderr[-2000:]
    resumed = run_python([script(tmp_path, "resume", uri, flush_timeout=None)], tmp_path,
                         env, scaled_timeout(60))
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    run = only_run(client)
    assert history(client, run.info.run_id, "step") == [(s, float(s)) for s in range(1, 10)]
    assert run.info.status == "FINISHED"


class PutCost(tfloop.Callback):
    _chief_only = False

    def _trigger(self):
        self.trainer.monitors.put_scalar("val-error", 1.0)


@pytest.mark.slow
def test_a_pruned_trial_is_a_finished_run_that_says_why(store, logdir):
    import optuna
    uri, client = store
    trial = optuna.create_study(pruner=optuna.pruners.ThresholdPruner(upper=0.5)).ask()
    with pytest.raises(optuna.TrialPruned):
        train_linear([PutCost(), tfloop.OptunaPruningCallback(trial, "val-error")],
                     monitors=[tfloop.MLflowMonitor(uri, "exp")], max_epoch=3)
    run = only_run(client)
    assert run.info.status == "FINISHED"
    assert run.data.tags["tfloop.stop_reason"] == \
        "Optuna pruned trial 0 after epoch 1 (val-error=1)"
    assert tfloop.utils.read_run_status(logdir).describe() == \
        "stopped (Optuna pruned trial 0 after epoch 1 (val-error=1))"
