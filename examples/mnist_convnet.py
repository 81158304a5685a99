#!/usr/bin/env python
"""Train a small convnet on handwritten digits with tfloop's standard callbacks.

The data is scikit-learn's bundled 8x8 digits (1797 images, no download), split 80/20 into
training and validation. The callback list is the one from tensorpack's documentation: save every
epoch, keep the best checkpoint, validate, schedule the learning rate, let a human change it
through a file, send the validation error to a command, track GPU use, and open a debug shell when
a file is touched.

    pip install -e ".[cpu,examples]" && python examples/mnist_convnet.py

While it trains, try ``echo learning_rate:1e-4 > train_log/mnist_convnet/hyper.txt`` or
``touch train_log/mnist_convnet/INJECT_SHELL.tmp``.
"""
import os
import sys

from digits import argument_parser, load_digits  # examples/digits.py

from tfloop import (
    ClassificationError,
    Conv2D,
    DatasetInput,
    Dropout,
    FullyConnected,
    GPUUtilizationTracker,
    HumanHyperParamSetter,
    InferenceRunner,
    InjectShell,
    MaxPooling,
    MinSaver,
    ModelDesc,
    ModelSaver,
    ScheduledHyperParamSetter,
    SendStat,
    SimpleTrainer,
    TrainConfig,
    add_moving_summary,
    launch_train_with_config,
    logger,
)
from tfloop.compat import tf, tfv1

BATCH_SIZE = 32


class Model(ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 8, 8, 1], tf.float32, "input"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        x = Conv2D("conv0", image, 32, 3, activation=tf.nn.relu)
        x = Conv2D("conv1", x, 32, 3, activation=tf.nn.relu)
        x = MaxPooling("pool0", x, 2)
        x = Conv2D("conv2", x, 64, 3, activation=tf.nn.relu)
        x = FullyConnected("fc0", x, 128, activation=tf.nn.relu)
        x = Dropout("dropout", x, rate=0.3)
        logits = FullyConnected("fc1", x, 10)
        tf.nn.softmax(logits, name="prob")   # what to export: tfloop export ... --output-names prob

        for k in (1, 5):
            wrong = tf.logical_not(tfv1.nn.in_top_k(logits, label, k))
            tf.cast(wrong, tf.float32, name=f"wrong-top{k}")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cross_entropy_loss")
        train_error = tf.reduce_mean(tf.cast(tf.logical_not(tfv1.nn.in_top_k(logits, label, 1)),
                                             tf.float32), name="train_error")
        add_moving_summary(cost, train_error)
        return cost

    def optimizer(self):
        lr = tfv1.get_variable("learning_rate", initializer=1e-3, trainable=False)
        return tfv1.train.AdamOptimizer(lr)


def get_config(max_epoch, logdir):
    (train_x, train_y), (val_x, val_y) = load_digits()

    def train_data():
        return tf.data.Dataset.from_tensor_slices((train_x, train_y)).shuffle(
            len(train_x), seed=1).batch(BATCH_SIZE)

    def val_data():
        return tf.data.Dataset.from_tensor_slices((val_x, val_y)).batch(128)

    return TrainConfig(
        model=Model(),
        data=DatasetInput(train_data),
        callbacks=[
            ModelSaver(),
            MinSaver("val-error-top1"),
            InferenceRunner(val_data, [ClassificationError("wrong-top1", "val-error-top1"),
                                       ClassificationError("wrong-top5", "val-error-top5")]),
            ScheduledHyperParamSetter("learning_rate", [(max(1, max_epoch // 2), 3e-4),
                                                        (max(2, max_epoch * 3 // 4), 1e-4)]),
            HumanHyperParamSetter("learning_rate"),
            SendStat("echo {val-error-top1} >> " + os.path.join(logdir, "val-error.txt"),
                     "val-error-top1"),
            GPUUtilizationTracker(),
            InjectShell(shell="ipython"),
        ],
        max_epoch=max_epoch,
    )


def main(argv=None):
    parser = argument_parser(__doc__.split("\n")[0], "mnist_convnet", max_epoch=20)
    args = parser.parse_args(argv)

    logdir = logger.set_logger_dir(args.logdir, action=args.logdir_action)
    trainer = SimpleTrainer()
    launch_train_with_config(get_config(args.max_epoch, logdir), trainer)
    error = trainer.monitors.get_latest("val-error-top1")
    logger.info(f"Final validation error: {error:.4f} (accuracy {1 - error:.2%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
