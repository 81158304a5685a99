"""A 2-worker + ps cluster on loopback when things go wrong (issue 23, cluster): workers failing
before training release the ps at once, and a worker that did not resume with the chief is
stopped with what to do (both start processes: slow)."""
import os
import re

import pytest
from distributed_support import launch, make_cluster, task_log

from tfloop.compat import tf


@pytest.mark.slow
def test_workers_failing_before_training_release_the_ps_at_once(tmp_path):
    results = launch(make_cluster(workers=2, ps=1), str(tmp_path), timeout_s=3, fail_at_setup=True)
    for name in ("worker0", "worker1"):
        assert results[name]["error"] == "a bug in the model", results[name]
    ps = results["ps0"]
    assert ps["exitcode"] == 1, ps
    assert re.match(r"/job:ps/task:0: worker [01] reported that its training failed",
                    ps["error"]), ps
    assert "did not come up" not in task_log(str(tmp_path), "ps0")


@pytest.mark.slow
def test_a_worker_that_did_not_resume_with_the_chief_is_told_what_to_do(tmp_path):
    outdir, cluster = str(tmp_path), make_cluster(workers=2, ps=1)
    options = dict(timeout_s=3, logdir_only_on_chief=True, auto_resume=True)
    first = launch(cluster, outdir, max_epoch=1, **options)
    assert all(r["exitcode"] == 0 for r in first.values()), first
    assert os.path.basename(tf.train.latest_checkpoint(os.path.join(outdir, "train_log"))) == \
        "model-6"
    second = launch(make_cluster(workers=2, ps=1), outdir, max_epoch=2, **options)
    worker = second["worker1"]
    assert worker["error_type"] == "ClusterError", worker
    assert worker["error"].startswith(
        "/job:worker/task:1: this worker starts at epoch 1, but the chief resumed at global step 6 "
        "(epoch 2): the workers did not resume from the same log directory. Call "
        "logger.set_logger_dir(<the chief's directory>, action='keep') on every worker")
    # The chief and the ps stop at once (the ps hears of the failure), instead of hanging.
    assert second["worker0"]["exitcode"] == second["ps0"]["exitcode"] == 1, second
    assert re.match(r"/job:ps/task:0: worker 1 reported that its training failed",
                    second["ps0"]["error"]), second["ps0"]
    # The chief fails with what happened: in a callback's own session call before its first
    # step, or in that step when it got there before the ps stopped (a race of the processes).
    chief = second["worker0"]
    assert chief["error_type"] == "ClusterError", chief
    assert re.match(r"/job:worker/task:0: (a session call before the first step|step 7) failed: "
                    r"another task of the cluster died, hung or stopped responding",
                    chief["error"]), chief
