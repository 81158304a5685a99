"""A monitor backend that appends every scalar to a SQLite table, and a short run that uses it."""
import sqlite3
import time

import numpy as np
import tensorflow as tf

from tfloop import (
    ModelDesc,
    MonitorBase,
    ScalarPrinter,
    SimpleTrainer,
    TrainConfig,
    add_moving_summary,
    launch_train_with_config,
)


class SQLiteWriter(MonitorBase):
    """Append a row (wall_time, epoch, global_step, name, value) to table ``scalars`` for every
    scalar put to the monitors; commit once per epoch.

    Example:
        >>> TrainConfig(..., monitors=[SQLiteWriter("scalars.db"), ScalarPrinter()])
    """

    def __init__(self, path):
        self.path = path
        self.db = None

    def _setup_graph(self):
        # Not in _before_train: other callbacks may put scalars in their before_train, before ours.
        self.db = sqlite3.connect(self.path)
        self.db.execute("CREATE TABLE IF NOT EXISTS scalars (wall_time REAL, epoch INTEGER, "
                        "global_step INTEGER, name TEXT, value REAL)")

    def process_scalar(self, name, value):
        self.db.execute("INSERT INTO scalars VALUES (?, ?, ?, ?, ?)",
                        (time.time(), self.epoch_num, self.global_step, name, value))

    def _trigger(self):
        self.db.commit()

    def _after_train(self):
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


def main(db_path="scalars.db"):
    x = np.random.RandomState(0).rand(64, 3).astype("float32")
    y = x @ np.array([1.0, -2.0, 0.5], "float32")
    config = TrainConfig(
        model=Linear(), data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(16),
        max_epoch=3, monitors=[SQLiteWriter(db_path), ScalarPrinter()])
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    with sqlite3.connect(db_path) as db:
        for row in db.execute("SELECT epoch, global_step, name, value FROM scalars"):
            print(row)
    return trainer


if __name__ == "__main__":
    main()
