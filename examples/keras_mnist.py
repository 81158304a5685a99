#!/usr/bin/env python
"""Train an existing Keras 3 model on handwritten digits with tfloop, then save it with Keras.

The model is an ordinary ``keras.Sequential`` convnet; :class:`tfloop.KerasModelDesc` hands it to
tfloop's trainer with a ``tf.compat.v1`` optimizer. tfloop's callbacks save checkpoints, validate
every epoch and schedule the learning rate. At the end the trained weights go back into the Keras
model (``restore_keras_weights``), which is saved as ``model.keras`` and reloaded by Keras alone.

The data is scikit-learn's bundled 8x8 digits (1797 images, no download), split 80/20.

    pip install -e ".[cpu,examples]" && python examples/keras_mnist.py
    python examples/keras_mnist.py --max-epoch 2 --steps-per-epoch 3     # a quick check
"""
import os
import sys

import keras
import numpy as np
from digits import argument_parser, load_digits  # examples/digits.py

from tfloop import (
    InferenceRunner,
    KerasModelDesc,
    ModelSaver,
    ScalarStats,
    ScheduledHyperParamSetter,
    SimpleTrainer,
    TrainConfig,
    launch_train_with_config,
    logger,
)
from tfloop.compat import tf, tfv1

BATCH_SIZE = 32


def make_model():
    """A small convnet, as one would write it for ``model.fit``."""
    return keras.Sequential([
        keras.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.BatchNormalization(),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dropout(0.3),
        keras.layers.Dense(10, activation="softmax"),
    ], name="digits")


def optimizer():
    """Adam on a ``learning_rate`` variable, so that ScheduledHyperParamSetter can set it."""
    lr = tfv1.get_variable("learning_rate", initializer=1e-3, trainable=False)
    return tfv1.train.AdamOptimizer(lr)


def get_config(model, max_epoch, steps_per_epoch=None):
    (train_x, train_y), (val_x, val_y) = load_digits()

    def train_data():
        return tf.data.Dataset.from_tensor_slices((train_x, train_y)).shuffle(
            len(train_x), seed=1).repeat().batch(BATCH_SIZE)

    def val_data():
        return tf.data.Dataset.from_tensor_slices((val_x, val_y)).batch(128)

    desc = KerasModelDesc(model, "sparse_categorical_crossentropy", optimizer,
                          metrics={"accuracy": "sparse_categorical_accuracy"})
    return desc, TrainConfig(
        model=desc,
        data=train_data,
        callbacks=[
            ModelSaver(),
            InferenceRunner(val_data, ScalarStats(["cost", "accuracy"])),
            ScheduledHyperParamSetter("learning_rate", [(max(1, max_epoch // 2), 3e-4),
                                                        (max(2, max_epoch * 3 // 4), 1e-4)]),
        ],
        steps_per_epoch=steps_per_epoch or len(train_x) // BATCH_SIZE,
        max_epoch=max_epoch,
    )


def main(argv=None):
    parser = argument_parser(__doc__.split("\n")[0], "keras_mnist", max_epoch=10)
    parser.add_argument("--steps-per-epoch", type=int, default=None,
                        help="training steps per epoch (default: one pass over the data)")
    args = parser.parse_args(argv)

    logdir = logger.set_logger_dir(args.logdir, action=args.logdir_action)
    model = make_model()
    desc, config = get_config(model, args.max_epoch, args.steps_per_epoch)
    trainer = SimpleTrainer()
    launch_train_with_config(config, trainer)
    logger.info(f"Validation accuracy during training: "
                f"{trainer.monitors.get_latest('validation_accuracy'):.2%}")

    desc.restore_keras_weights(logdir)          # the latest checkpoint, into the Keras model
    path = os.path.join(logdir, "model.keras")
    model.save(path)
    (_, _), (val_x, val_y) = load_digits()
    reloaded = keras.models.load_model(path)
    accuracy = np.mean(np.argmax(reloaded.predict(val_x, verbose=0), axis=1) == val_y)
    logger.info(f"Saved {path}; reloaded by Keras, its validation accuracy is {accuracy:.2%}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
