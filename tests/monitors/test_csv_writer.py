"""CSVWriter: one row per epoch appended in place, a header that grows without losing data,
resuming."""
import csv
import glob
import os

import pandas as pd
from support import train_linear

from tfloop import Callback, CSVWriter


class PutNewNames(Callback):
    """Epoch 1 puts ``a``; later epochs also put a scalar named after the epoch (``b2``, ``b3``)."""

    def __init__(self, logdir=None):
        self.logdir = logdir
        self.headers_seen = []

    def _before_epoch(self):
        if self.logdir and os.path.exists(os.path.join(self.logdir, "stats.csv")):
            with open(os.path.join(self.logdir, "stats.csv"), newline="") as f:
                self.headers_seen.append(next(csv.reader(f)))

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("a", self.epoch_num / 4)
        if self.epoch_num > 1:
            self.trainer.monitors.put_scalar(f"b{self.epoch_num}", self.epoch_num)


def rows(logdir, name="stats.csv"):
    with open(os.path.join(logdir, name), newline="") as f:
        return list(csv.reader(f))


def test_header_grows_and_older_rows_keep_their_values(logdir):
    putter = PutNewNames(logdir)
    train_linear([putter], monitors=[CSVWriter()], max_epoch=3)
    assert putter.headers_seen == [["epoch_num", "global_step", "a"],
                                   ["epoch_num", "global_step", "a", "b2"]]
    assert rows(logdir) == [
        ["epoch_num", "global_step", "a", "b2", "b3"],
        ["1", "3", "0.25", "", ""],
        ["2", "6", "0.5", "2", ""],
        ["3", "9", "0.75", "", "3"],
    ]
    frame = pd.read_csv(os.path.join(logdir, "stats.csv"))
    assert frame["a"].tolist() == [0.25, 0.5, 0.75]
    assert frame["b2"].isna().tolist() == [True, False, True]


def test_resumed_run_appends_rows_and_keeps_old_ones(logdir):
    train_linear([PutNewNames()], monitors=[CSVWriter("metrics.csv")], max_epoch=2)
    # No checkpoint is restored here, so the global step starts again from 0.
    train_linear([PutNewNames()], monitors=[CSVWriter("metrics.csv")], starting_epoch=3,
                 max_epoch=3)
    assert rows(logdir, "metrics.csv") == [
        ["epoch_num", "global_step", "a", "b2", "b3"],
        ["1", "3", "0.25", "", ""],
        ["2", "6", "0.5", "2", ""],
        ["3", "3", "0.75", "", "3"],
    ]


def test_file_that_is_not_a_stats_table_is_backed_up(logdir, tfloop_log):
    with open(os.path.join(logdir, "stats.csv"), "w") as f:
        f.write("step,loss\n1,0.5\n")
    train_linear([PutNewNames()], monitors=[CSVWriter()], max_epoch=1)
    assert rows(logdir) == [["epoch_num", "global_step", "a"], ["1", "3", "0.25"]]
    backups = glob.glob(os.path.join(logdir, "stats.csv.*.bak"))
    with open(backups[0]) as f:
        assert f.read() == "step,loss\n1,0.5\n"
    assert any("does not start with the columns epoch_num,global_step" in m
               for _, m in tfloop_log)


def test_rows_every_k_steps(logdir):
    class PutLoss(Callback):
        def _trigger_step(self):
            self.trainer.monitors.put_scalar("loss", self.global_step * 1.5)

    train_linear([PutLoss()], monitors=[CSVWriter(every_k_steps=2)], max_epoch=2)
    assert rows(logdir) == [["epoch_num", "global_step", "loss"], ["1", "2", "3.0"],
                            ["1", "3", "4.5"], ["2", "4", "6.0"], ["2", "6", "9.0"]]


def test_rows_are_appended_in_place_and_training_ends_with_a_plain_table(logdir):
    inodes = []

    class Inode(Callback):
        def _before_epoch(self):
            path = os.path.join(logdir, "stats.csv")
            if os.path.exists(path):
                inodes.append(os.stat(path).st_ino)
                assert pd.read_csv(path)["a"].tolist()[-1] == (self.epoch_num - 1) / 4

    class PutA(Callback):
        def _trigger_epoch(self):
            self.trainer.monitors.put_scalar("a", self.epoch_num / 4)

    train_linear([PutA(), Inode()], monitors=[CSVWriter()], max_epoch=4)
    assert len(inodes) == 3 and len(set(inodes)) == 1
    with open(os.path.join(logdir, "stats.csv"), newline="") as f:
        assert f.read() == ("epoch_num,global_step,a\r\n1,3,0.25\r\n2,6,0.5\r\n3,9,0.75\r\n"
                            "4,12,1.0\r\n")


def test_a_row_cut_short_by_a_crash_is_left_out_when_resuming(logdir, log_warnings):
    with open(os.path.join(logdir, "stats.csv"), "w", newline="") as f:
        f.write("epoch_num,global_step,a\r\n1,3,0.25\r\n2,6,0.")
    train_linear([PutNewNames()], monitors=[CSVWriter()], starting_epoch=2, max_epoch=2)
    assert rows(logdir) == [["epoch_num", "global_step", "a", "b2"], ["1", "3", "0.25", ""],
                            ["2", "3", "0.5", "2"]]
    assert any("ends in an incomplete row" in m and "'2,6,0.'" in m for m in log_warnings)
