"""Keras ``fit`` as the reference for Keras callbacks: a tiny model trained for as many epochs as
a script of monitored values, with those values put in ``logs`` before the callbacks see them."""
import numpy as np


def keras_fit_with_values(callbacks, values, name="val", epochs=None):
    """Fit a one-weight Keras model for ``len(values)`` epochs (or ``epochs``), with
    ``logs[name] = values[epoch]`` at every epoch's end, seen by ``callbacks`` after it.

    Returns:
        (keras.Model, int): the model and the number of epochs that ran.
    """
    import keras

    class ScriptedLogs(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs[name] = values[epoch]

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    x = np.ones((4, 1), np.float32)
    history = model.fit(x, x, batch_size=4, epochs=epochs or len(values), verbose=0,
                        callbacks=[ScriptedLogs()] + list(callbacks))
    return model, len(history.history["loss"])
