"""A model built with Keras 3 layers restores into predictors and exports like any other."""
import keras
import numpy as np
import pytest
from support import batches, make_regression_data

import tfloop
from tfloop.compat import tf


class KerasModel(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        hidden = keras.layers.Dense(4, activation="tanh")(x)
        hidden = keras.layers.Dropout(0.5)(hidden)
        pred = tf.squeeze(keras.layers.Dense(1)(hidden), 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tf.compat.v1.train.GradientDescentOptimizer(0.1)


def numpy_pred(weights, x):
    hidden = np.tanh(x @ weights["dense/kernel"] + weights["dense/bias"])
    return (hidden @ weights["dense_1/kernel"] + weights["dense_1/bias"])[:, 0]


@pytest.mark.slow
def test_keras_layers_restore_into_predictor_and_export(logdir, tmp_path):
    x, y = make_regression_data(12)
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=KerasModel(), data=batches(x, y, 4), max_epoch=2, callbacks=[tfloop.ModelSaver()],
        monitors=[], extra_callbacks=[]), tfloop.SimpleTrainer())
    weights = tfloop.load_chkpt_vars(logdir)
    config = tfloop.PredictConfig(model=KerasModel(), session_init=logdir, input_names=["x"],
                                  output_names=["pred"])
    pred, = tfloop.OfflinePredictor(config)(x)      # dropout is off in the predict tower
    np.testing.assert_allclose(pred, numpy_pred(weights, x), rtol=1e-5, atol=1e-6)
    tfloop.ModelExporter(config).export_serving(str(tmp_path / "keras"))
    served = tf.saved_model.load(str(tmp_path / "keras")).signatures["serving_default"](
        x=tf.constant(x))["pred"].numpy()
    np.testing.assert_allclose(served, pred, atol=1e-6)
