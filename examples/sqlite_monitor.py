"""A monitor backend that writes every scalar to a SQLite table, and a short run that uses it."""
import os
import sqlite3
import time

import numpy as np
import tensorflow as tf

from tfloop import (
    LogDirMonitor,
    ModelDesc,
    ScalarPrinter,
    SimpleTrainer,
    TrainConfig,
    add_moving_summary,
    launch_train_with_config,
    logger,
)


class SQLiteWriter(LogDirMonitor):
    """Write a row (wall_time, epoch, global_step, name, value) to table ``scalars`` of
    ``<log dir>/scalars.db`` for every scalar put to the monitors; commit once per epoch.

    Like ``stats.json``, the table holds one history: a run drops the rows that earlier runs
    wrote at or after the step it starts from, so a rerun from scratch starts the table over and
    a resumed run continues it.

    Example:
        >>> TrainConfig(..., monitors=[SQLiteWriter(), ScalarPrinter()])
    """

    def __init__(self, filename="scalars.db", logdir=None):
        super().__init__(logdir)
        self.filename = filename
        self.db = None

    def _before_train(self):
        # Scalars other callbacks put before this point reach process_scalar right after it.
        if self.logdir is None:
            return
        self.db = sqlite3.connect(os.path.join(self.logdir, self.filename))
        self.db.execute("CREATE TABLE IF NOT EXISTS scalars (wall_time REAL, epoch INTEGER, "
                        "global_step INTEGER, name TEXT, value REAL)")
        # The rows of earlier runs from the step this run starts at on.
        self.db.execute("DELETE FROM scalars WHERE global_step >= ?", (self.global_step,))

    def process_scalar(self, name, value):
        if self.db is not None:
            self.db.execute("INSERT INTO scalars VALUES (?, ?, ?, ?, ?)",
                            (time.time(), self.epoch_num, self.global_step, name, value))

    def _trigger(self):
        if self.db is not None:
            self.db.commit()

    def _after_train(self):
        if self.db is not None:
            self.db.commit()
            self.db.close()


class Linear(ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tf.compat.v1.get_variable("w", [3, 1])
        cost = tf.reduce_mean(tf.square(tf.squeeze(tf.matmul(x, w), 1) - y), name="cost")
        add_moving_summary(cost)
        return cost

    def optimizer(self):
        return tf.compat.v1.train.GradientDescentOptimizer(0.1)


def main(logdir="train_log/sqlite_monitor"):
    logger.set_logger_dir(logdir, action="keep")
    x = np.random.RandomState(0).rand(64, 3).astype("float32")
    y = x @ np.array([1.0, -2.0, 0.5], "float32")
    config = TrainConfig(
        model=Linear(), data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(16),
        max_epoch=3, monitors=[SQLiteWriter(), ScalarPrinter()])
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    with sqlite3.connect(os.path.join(logdir, "scalars.db")) as db:
        for row in db.execute("SELECT epoch, global_step, name, value FROM scalars"):
            print(row)
    return trainer


if __name__ == "__main__":
    main()
