"""stats.json and stats.csv of a real training killed with SIGKILL at random moments over many
one-step epochs: every time, both files are complete and hold the same consecutive epochs, and a
run that restarts from ``JSONWriter.load_existing_epoch_number`` (tensorpack's way) continues
them."""
import csv
import json
import os
import random
import signal
import time

import pytest
from forked_python import start_python, wait_for_line
from support import scaled_timeout

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = """
import sys
sys.path.insert(0, sys.argv[2])
import tfloop
from support import LinearModel, batches, make_regression_data
from tfloop.utils import logger

class Started(tfloop.Callback):
    def _before_train(self):
        print("started", flush=True)

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("half_epoch", self.epoch_num / 2)

logger.set_logger_dir(sys.argv[1], action="keep")
last = tfloop.JSONWriter.load_existing_epoch_number(sys.argv[1]) or 0
x, y = make_regression_data(12)
config = tfloop.TrainConfig(
    model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), callbacks=[Started()],
    monitors=[tfloop.JSONWriter(), tfloop.CSVWriter()], extra_callbacks=[],
    steps_per_epoch=1, starting_epoch=last + 1, max_epoch=10 ** 6)
tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
"""


def read_both(logdir):
    with open(os.path.join(logdir, "stats.json")) as f:
        records = json.load(f)
    with open(os.path.join(logdir, "stats.csv"), newline="") as f:
        rows = [row for row in csv.DictReader(f)]
    return records, rows


@pytest.mark.slow
def test_kill_9_at_random_moments_over_many_epochs(tmp_path):
    """Five runs in a row, each killed 0.5-2 s into its training (hundreds of one-step epochs);
    each run is a process forked from one that imported TensorFlow once, so that the time goes to
    training rather than to five imports of TensorFlow."""
    logdir = str(tmp_path / "log")
    out_path, err_path = str(tmp_path / "stdout"), str(tmp_path / "stderr")
    rng = random.Random(0)
    lengths = []
    for _ in range(5):
        open(out_path, "w").close()   # no "started" from the run before
        child = start_python(["-c", WORKER, logdir, TESTS], tmp_path, dict(os.environ), out_path,
                             err_path)
        try:
            wait_for_line(child, out_path, err_path, "started", scaled_timeout(60))
            time.sleep(rng.uniform(0.5, 2.0))
        finally:   # even when the wait failed: the training would never end
            child.kill()
            child.join(timeout=scaled_timeout(10))
        assert child.exitcode == -signal.SIGKILL
        records, rows = read_both(logdir)
        epochs = [r["epoch_num"] for r in records]
        assert epochs == list(range(1, len(records) + 1))
        assert [r["half_epoch"] for r in records] == [e / 2 for e in epochs]
        # CSVWriter writes after JSONWriter: at most one row behind (and when it was, the next
        # run, which starts after stats.json's last epoch, backs stats.csv up and starts anew).
        row_epochs = [int(r["epoch_num"]) for r in rows]
        assert row_epochs == list(range(row_epochs[0], row_epochs[0] + len(rows)))
        assert row_epochs[-1] in (epochs[-1], epochs[-1] - 1)
        assert all(float(r["half_epoch"]) == int(r["epoch_num"]) / 2 for r in rows)
        lengths.append(len(records))
    assert lengths == sorted(lengths) and lengths[-1] > lengths[0] > 0
