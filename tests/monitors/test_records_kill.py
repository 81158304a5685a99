"""stats.json and stats.csv of a real training killed with SIGKILL at random moments over many
one-step epochs: every time, both files are complete and hold the same consecutive epochs, and a
run that restarts from ``JSONWriter.load_existing_epoch_number`` (tensorpack's way) continues
them."""
import csv
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
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
    logdir = str(tmp_path / "log")
    rng = random.Random(0)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), TF_CPP_MIN_LOG_LEVEL="3")
    lengths = []
    for _ in range(5):
        child = subprocess.Popen([sys.executable, "-c", WORKER, logdir, TESTS],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                 text=True)
        deadline = time.monotonic() + scaled_timeout(60)
        while child.stdout.readline().strip() != "started":
            assert child.poll() is None and time.monotonic() < deadline, "the worker died"
        time.sleep(rng.uniform(0.5, 2.0))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=scaled_timeout(10))
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
