"""Keras ``fit`` as the reference for Keras callbacks: a tiny model trained for as many epochs as
a script of monitored values, with those values put in ``logs`` before the callbacks see them."""
import warnings

import numpy as np


def keras_fit_with_logs(callbacks, logs_per_epoch, lr=0.1):
    """Fit a one-weight Keras model (SGD at ``lr``) for ``len(logs_per_epoch)`` epochs; at each
    epoch's end ``logs`` becomes exactly ``logs_per_epoch[epoch]`` before ``callbacks`` see it.

    Returns:
        (keras.Model, int): the model and the number of epochs that ran.
    """
    import keras

    class ScriptedLogs(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs.clear()
            logs.update(logs_per_epoch[epoch])

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(lr), loss="mse", run_eagerly=True)
    x = np.ones((4, 1), np.float32)
    history = model.fit(x, x, batch_size=4, epochs=len(logs_per_epoch), verbose=0,
                        callbacks=[ScriptedLogs()] + list(callbacks))
    return model, len(history.epoch)


def keras_fit_with_values(callbacks, values, name="val", lr=0.1):
    """:func:`keras_fit_with_logs` with ``{name: values[epoch]}`` as each epoch's logs."""
    return keras_fit_with_logs(callbacks, [{name: v} for v in values], lr=lr)


def keras_batches_per_epoch(dataset, epochs, **fit_kwargs):
    """The batches Keras ``fit`` takes from ``dataset`` (elements ``(x, y)``, ``x`` of shape
    ``(batch, n)``) in each of ``epochs`` epochs, with ``steps_per_epoch`` and the rest of
    ``fit_kwargs`` as given: the reference for what an epoch is."""
    import keras

    counts = []

    class CountBatches(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            counts.append(0)

        def on_train_batch_end(self, batch, logs=None):
            counts[-1] += 1

    features = dataset.element_spec[0].shape[-1]
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    with warnings.catch_warnings():
        # Keras warns that data of unknown length "ran out" at the end of each epoch's pass.
        warnings.simplefilter("ignore", UserWarning)
        model.fit(dataset, epochs=epochs, verbose=0, callbacks=[CountBatches()], **fit_kwargs)
    return counts
