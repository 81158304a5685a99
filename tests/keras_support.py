"""Keras ``fit`` as the reference for Keras callbacks: a tiny model trained for as many epochs as
a script of monitored values, with those values put in ``logs`` before the callbacks see them."""
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
