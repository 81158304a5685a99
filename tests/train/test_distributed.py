"""Several workers as real processes on 127.0.0.1: the same model as one process, clean exits,
and a dead worker stops the others with a clear error."""
import json
import os
import re
import socket
import subprocess
import sys

import distributed_support
import numpy as np
import pytest
from distributed_support import (
    CLUSTER_WAIT_S,
    MODEL_VARIABLES,
    STEPS,
    launch,
    make_cluster,
    task_log,
    train_script,
)

import tfloop
from tfloop.compat import tf
from tfloop.train.cluster import (
    ClusterError,
    ClusterTask,
    create_server,
    shard_dataset,
    wait_for_tasks,
)
from tfloop.train.distributed import trainer_from_tf_config

RTOL, ATOL = 1e-5, 1e-6
# Every process has a watchdog and the launcher kills what is left after CLUSTER_WAIT_S: a hang
# fails the test instead of blocking the suite. Normal runs end in a few seconds.


@pytest.fixture(scope="module")
def reference():
    return train_script(tfloop.SimpleTrainer(), save=False).values


def _check_same_model(results, reference, workers):
    for name in [f"worker{i}" for i in range(workers)]:
        values = results[name]["values"]
        for var in MODEL_VARIABLES:
            np.testing.assert_allclose(values[var], reference[var], rtol=RTOL, atol=ATOL,
                                       err_msg=f"{name} {var}")
            np.testing.assert_array_equal(values[var], results["worker0"]["values"][var])
        assert values["global_step"] == STEPS


def _check_clean_exit(results, outdir):
    for name, result in results.items():
        assert result["exitcode"] == 0 and result["ok"], (name, result, task_log(outdir, name))


def _check_only_chief_saved(outdir, reference):
    logdir = os.path.join(outdir, "train_log")
    checkpoint = tf.train.latest_checkpoint(logdir)
    assert os.path.basename(checkpoint) == f"model-{STEPS}"
    names = [name for name, _ in tf.train.list_variables(checkpoint)]
    assert sorted(names) == sorted(["fc1/W", "fc1/b", "fc2/W", "global_step", "fc1/W/Momentum",
                                    "fc1/b/Momentum", "fc2/W/Momentum",
                                    "EMA/cost/biased", "EMA/cost/decay_power"])
    reader = tf.train.load_checkpoint(checkpoint)
    np.testing.assert_allclose(reader.get_tensor("fc2/W"), reference["fc2/W"], rtol=RTOL, atol=ATOL)
    worker1 = os.path.join(logdir, "worker-1")
    files = sorted(os.listdir(worker1))
    assert [f for f in files if not f.startswith("events.out.tfevents.")] == [
        "log.log", "stats.json"]
    with open(os.path.join(worker1, "stats.json")) as f:
        assert json.load(f)[-1]["global_step"] == STEPS


@pytest.mark.slow
@pytest.mark.parametrize("ps", [1, 2])
def test_parameter_server_cluster_trains_the_single_process_model(tmp_path, reference, ps):
    outdir = str(tmp_path)
    results = launch(make_cluster(workers=2, ps=ps), outdir, gpus=1)
    _check_clean_exit(results, outdir)
    _check_same_model(results, reference, workers=2)
    _check_only_chief_saved(outdir, reference)
    for index in range(ps):
        assert "every worker finished" in task_log(outdir, f"ps{index}")
    placement = ", ".join(f"/job:ps/task:{i}" for i in range(ps))
    assert f"variables on {placement}." in task_log(outdir, "worker0")


@pytest.mark.slow
def test_collective_cluster_trains_the_single_process_model(tmp_path, reference):
    outdir = str(tmp_path)
    results = launch(make_cluster(workers=2), outdir, gpus=2)
    _check_clean_exit(results, outdir)
    _check_same_model(results, reference, workers=2)
    for name in ("worker0", "worker1"):
        values = results[name]["values"]
        np.testing.assert_array_equal(values["tower1/fc1/W"], values["fc1/W"])
        np.testing.assert_array_equal(values["tower1/fc1/W/Momentum"], values["fc1/W/Momentum"])
    _check_only_chief_saved(outdir, reference)


@pytest.mark.slow
@pytest.mark.parametrize("ps, gpus", [(1, 1), (0, 2)], ids=["parameter_server", "collective"])
def test_epochs_of_passes_end_on_every_worker_with_the_pass_of_the_shortest_shard(tmp_path, ps,
                                                                                   gpus):
    # Worker 0's shard has one step more a pass than worker 1's: every epoch ends after 5 steps
    # on both, and worker 0 drops the rest of its pass, so each epoch is a new pass again.
    outdir = str(tmp_path)
    results = launch(make_cluster(workers=2, ps=ps), outdir, gpus=gpus, passes=True, max_epoch=3)
    _check_clean_exit(results, outdir)
    for name, stats in (("worker0", "stats.json"), ("worker1", "worker-1/stats.json")):
        assert results[name]["values"]["global_step"] == 15
        with open(os.path.join(outdir, "train_log", stats)) as f:
            records = json.load(f)
        assert [(r["epoch_num"], r["global_step"]) for r in records] == [(1, 5), (2, 10), (3, 15)]
    first, second = (results[f"worker{i}"]["values"] for i in range(2))
    for var in MODEL_VARIABLES:
        np.testing.assert_array_equal(first[var], second[var], err_msg=var)


@pytest.mark.slow
@pytest.mark.parametrize("ps", [1, 0], ids=["parameter_server", "collective"])
def test_a_float16_cluster_trains_with_one_loss_scale(tmp_path, ps):
    outdir = str(tmp_path)
    results = launch(make_cluster(workers=2, ps=ps), outdir, gpus=1 if ps else 2,
                     mixed_precision="float16")
    _check_clean_exit(results, outdir)
    first, second = (results[f"worker{i}"]["values"] for i in range(2))
    for var in MODEL_VARIABLES + ["loss_scale/scale", "loss_scale/skipped_steps"]:
        np.testing.assert_array_equal(first[var], second[var], err_msg=var)
        assert first[var].dtype != np.float16, var
    assert first["global_step"] == STEPS and first["loss_scale/scale"] <= 2.0 ** 15
    with open(os.path.join(outdir, "train_log", "stats.json")) as f:
        assert "loss_scale" in json.load(f)[-1]
    assert "without a GPU" in task_log(outdir, "worker0")


@pytest.mark.slow
@pytest.mark.parametrize("ps", [1, 0], ids=["parameter_server", "collective"])
def test_a_dead_worker_stops_the_others_with_a_clear_error(tmp_path, ps):
    outdir = str(tmp_path)
    results = launch(make_cluster(workers=2, ps=ps), outdir, gpus=1, timeout_s=3,
                     die=["worker", 1], die_at=3)
    assert results["worker1"]["exitcode"] == 17
    chief = results["worker0"]
    assert chief["exitcode"] == 1 and chief["error_type"] == "ClusterError", chief
    assert chief["error"].startswith("/job:worker/task:0: step 4 failed: another task of the "
                                     "cluster died, hung or stopped responding (timeout 3 s)")
    # The dead worker is named, not the healthy ps the step happened to wait on.
    assert re.search(r"\(timeout 3 s\): /job:worker/task:1 \(127.0.0.1:\d+\) cannot be reached "
                     r"\(killed or crashed\?\)(; /job:ps/task:0 \(127.0.0.1:\d+\) stopped too \(a "
                     r"ps stops when a worker fails\))?$", chief["error"]), chief
    assert not tf.train.latest_checkpoint(os.path.join(outdir, "train_log"))
    if ps:
        # The ps sees worker 1 go away, or hears of the failure from the chief, whichever is first.
        assert results["ps0"]["exitcode"] == 1
        assert re.match(r"/job:ps/task:0: worker (1 \(127.0.0.1:\d+\) went away before it "
                        r"finished training|0 reported that its training failed)",
                        results["ps0"]["error"]), results["ps0"]


@pytest.mark.slow
def test_the_same_script_as_separate_processes_exits_by_itself(tmp_path, reference):
    """``python script.py`` in three processes (1 ps + 2 workers) that differ only in TF_CONFIG:
    each trains (or serves), then exits on its own."""
    cluster = make_cluster(workers=2, ps=1)
    procs = {}
    for job, addresses in cluster.items():
        for index in range(len(addresses)):
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_CONFIG=json.dumps(
                {"cluster": cluster, "task": {"type": job, "index": index}}))
            procs[job + str(index)] = subprocess.Popen(
                [sys.executable, distributed_support.__file__, str(tmp_path)], env=env,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    for name, proc in procs.items():
        try:
            output, _ = proc.communicate(timeout=CLUSTER_WAIT_S)
        except subprocess.TimeoutExpired:
            for p in procs.values():
                p.kill()
            pytest.fail(f"{name} did not exit within {CLUSTER_WAIT_S} s")
        assert proc.returncode == 0, (name, output[-3000:])
    for index in range(2):
        with np.load(str(tmp_path / f"worker{index}.npz")) as values:
            for var in MODEL_VARIABLES:
                np.testing.assert_allclose(values[var.replace("/", "|")], reference[var],
                                           rtol=RTOL, atol=ATOL)


@pytest.mark.slow
def test_a_session_config_for_a_cluster_trainer_is_refused(tmp_path):
    results = launch(make_cluster(workers=1), str(tmp_path), session_config=True)
    assert results["worker0"]["error_type"] == "ValueError"
    assert results["worker0"]["error"].startswith(
        "DistributedTrainerReplicated: the session is created on this worker's server with the "
        "server's config; give session options to create_server")


def test_tf_config_parsing():
    cluster = {"worker": ["127.0.0.1:1000", "127.0.0.1:1001"], "ps": ["127.0.0.1:1002"]}
    task = ClusterTask.from_tf_config(json.dumps({"cluster": cluster,
                                                  "task": {"type": "worker", "index": 1}}))
    assert (task.job_name, task.task_index, task.is_chief) == ("worker", 1, False)
    assert (task.num_workers, task.num_ps, task.device()) == (2, 1, "/job:worker/task:1")
    assert task.address("ps", 0) == "127.0.0.1:1002"
    assert ClusterTask(cluster, "worker", 0).is_chief
    assert not ClusterTask(cluster, "ps", 0).is_chief


@pytest.mark.parametrize("task,expected", [
    ({"type": "chief", "index": 0}, ("worker", 0, True)),
    ({"type": "worker", "index": 0}, ("worker", 1, False)),
    ({"type": "worker", "index": "1"}, ("worker", 2, False)),
    ({"type": "ps", "index": 0}, ("ps", 0, False)),
])
def test_a_chief_job_is_worker_0_as_kubeflow_and_estimator_write_it(task, expected):
    cluster = {"chief": ["127.0.0.1:1000"], "worker": ["127.0.0.1:1001", "127.0.0.1:1002"],
               "ps": ["127.0.0.1:1003"], "evaluator": ["127.0.0.1:1004"]}
    parsed = ClusterTask.from_tf_config({"cluster": cluster, "task": task})
    assert (parsed.job_name, parsed.task_index, parsed.is_chief) == expected
    assert parsed.cluster.as_dict() == {
        "worker": ["127.0.0.1:1000", "127.0.0.1:1001", "127.0.0.1:1002"],
        "ps": ["127.0.0.1:1003"]}


@pytest.mark.slow
def test_a_cluster_with_a_chief_job_trains_the_single_process_model(tmp_path, reference):
    outdir = str(tmp_path)
    cluster = make_cluster(workers=2)
    results = launch({"chief": cluster["worker"][:1], "worker": cluster["worker"][1:]}, outdir,
                     gpus=1)
    assert {name: r["exitcode"] for name, r in results.items()} == {"chief0": 0, "worker0": 0}, \
        [task_log(outdir, name) for name in results]
    for name in results:
        np.testing.assert_allclose(results[name]["values"]["fc2/W"], reference["fc2/W"],
                                   rtol=RTOL, atol=ATOL)
    logdir = os.path.join(outdir, "train_log")
    assert os.path.basename(tf.train.latest_checkpoint(logdir)) == f"model-{STEPS}"
    assert os.path.isdir(os.path.join(logdir, "worker-1"))


@pytest.mark.parametrize("tf_config,match", [
    ("{not json", "TF_CONFIG is not valid JSON"),
    ({"cluster": {"worker": ["a:1"]}}, "must have a 'cluster' dict and a 'task' dict"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}}, "needs 'type' and 'index'"),
    ({"cluster": {"chief": ["a:1", "a:3"], "worker": ["a:2"]},
      "task": {"type": "chief", "index": 0}}, "'chief' job must list one address"),
    ({"cluster": {"chief": ["a:1"], "worker": ["a:2"], "evaluator": ["a:3"]},
      "task": {"type": "evaluator", "index": 0}},
     r"an 'evaluator' task, which tfloop does not run: in its place, run a script that "
     r"evaluates the chief's checkpoints as they appear: `for checkpoint in "
     r"tf\.train\.checkpoints_iterator\(LOGDIR\): OfflinePredictor\(PredictConfig\("),
    ({"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 0}}, "no 'worker' job"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}},
     "Task type 'ps' is not a job of the cluster"),
    ({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 1}},
     "Task index 1 is out of range: job 'worker' has 1 task"),
    ({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}},
     "must list 'host:port' addresses"),
])
def test_bad_tf_config(tf_config, match):
    with pytest.raises(ValueError, match=match):
        ClusterTask.from_tf_config(tf_config)


def test_missing_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="TF_CONFIG is not set"):
        trainer_from_tf_config()


def test_shard_dataset_takes_every_nth_batch(monkeypatch):
    dataset = tf.data.Dataset.range(6)
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert shard_dataset(dataset) is dataset
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["a:1", "a:2"]}, "task": {"type": "worker", "index": 1}}))
    assert [int(v) for v in shard_dataset(dataset)] == [1, 3, 5]


@pytest.mark.parametrize("kwargs,error,match", [
    ({"timeout_s": -1}, ValueError, "timeout_s must be a number >= 0, got -1"),
    ({"num_cpu_devices": 0}, ValueError, "num_cpu_devices must be a positive int, got 0"),
])
def test_bad_server_arguments(kwargs, error, match):
    task = ClusterTask({"worker": ["127.0.0.1:1"]}, "worker", 0)
    with pytest.raises(error, match=match):
        create_server(task, **kwargs)
    with pytest.raises(TypeError, match="create_server needs a ClusterTask"):
        create_server({"worker": ["127.0.0.1:1"]})
    with pytest.raises(ValueError, match="Only workers read data; this task is /job:ps/task:0"):
        ClusterTask({"worker": ["a:1"], "ps": ["a:2"]}, "ps", 0).shard(tf.data.Dataset.range(2))


def test_waiting_for_a_task_that_is_not_up_ends_with_a_clear_error():
    port = distributed_support.free_ports(1)[0]
    task = ClusterTask({"worker": [f"127.0.0.1:{port}"]}, "worker", 0)
    with pytest.raises(ClusterError, match=r"/job:worker/task:0 at 127.0.0.1:\d+ is not reachable "
                                           r"after 0 s"):
        wait_for_tasks(task, [("worker", 0)], timeout_s=0.2)


def test_a_port_in_use_is_named():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        task = ClusterTask({"worker": [f"127.0.0.1:{port}"]}, "worker", 0)
        with pytest.raises(ClusterError, match=rf"/job:worker/task:0: cannot start its server at "
                                               rf"127.0.0.1:{port}: port {port} is in use"):
            create_server(task)


@pytest.mark.parametrize("index", ["1", " 1"])
def test_a_task_index_given_as_a_string_is_taken(index):
    tf_config = {"cluster": {"worker": ["a:1", "a:2"]}, "task": {"type": "worker", "index": index}}
    assert ClusterTask.from_tf_config(tf_config).task_index == 1


def test_a_task_index_that_is_no_number_is_named():
    with pytest.raises(ValueError, match=r"Task index must be an int \(TF_CONFIG's task 'index', "
                                         r"e.g. 0\), got 'first' \(str\)"):
        ClusterTask({"worker": ["a:1"]}, "worker", "first")
