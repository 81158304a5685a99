"""KerasModelDesc: a built keras.Model trained by tfloop, saved, and loaded back into Keras."""
import keras
import numpy as np
import pytest

import tfloop
from tfloop import InferenceRunner, KerasModelDesc, ModelSaver, ScalarStats, TowerContext
from tfloop.compat import tf, tfv1
from tfloop.train.multigpu import SyncMultiGPUTrainerReplicated

N_IN, N_CLASSES, BATCH, STEPS = 6, 3, 8, 5


def make_data(n=BATCH * STEPS, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, N_IN).astype(np.float32)
    label = (x[:, 0] > 0).astype(np.int32) + (x[:, 1] > 1).astype(np.int32)
    return x, label


def classifier():
    keras.utils.set_random_seed(4)
    return keras.Sequential([
        keras.Input((N_IN,)), keras.layers.Dense(16, activation="relu"),
        keras.layers.BatchNormalization(), keras.layers.Dropout(0.2),
        keras.layers.Dense(N_CLASSES, activation="softmax")])


def regressor():
    keras.utils.set_random_seed(5)
    inputs = keras.Input((N_IN,), name="features")
    hidden = keras.layers.Dense(8, activation="tanh")(inputs)
    return keras.Model(inputs, keras.layers.Dense(1)(hidden))


class Capture(tfloop.Callback):
    def _setup_graph(self):
        self.vars = tfv1.global_variables()

    def _values(self):
        return {v.op.name: value for v, value in zip(self.vars, self.trainer.sess.run(self.vars))}

    def _before_train(self):
        self.before = self._values()

    def _after_train(self):
        self.after = self._values()


def train(desc, data, trainer=None, callbacks=(), batch=BATCH):
    capture = Capture()
    config = tfloop.TrainConfig(
        model=desc, data=lambda: tf.data.Dataset.from_tensor_slices(data).batch(batch),
        callbacks=[capture, *callbacks], steps_per_epoch=STEPS, max_epoch=1)
    trainer = trainer or tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer, capture


SEQUENTIAL_WEIGHTS = {
    "sequential/dense/kernel": "sequential/dense/kernel",
    "sequential/dense/bias": "sequential/dense/bias",
    "sequential/batch_normalization/gamma": "sequential/batch_normalization/gamma",
    "sequential/batch_normalization/beta": "sequential/batch_normalization/beta",
    "sequential/batch_normalization/moving_mean": "sequential/batch_normalization/moving_mean",
    "sequential/batch_normalization/moving_variance":
        "sequential/batch_normalization/moving_variance",
    "sequential/dense_1/kernel": "sequential/dense_1/kernel",
    "sequential/dense_1/bias": "sequential/dense_1/bias"}


@pytest.mark.slow
def test_trains_saves_and_loads_back_into_keras(logdir, tmp_path):
    classifier()                       # Keras' counters move on: the next is sequential_1
    model = classifier()
    initial = [w.copy() for w in model.get_weights()]
    desc = KerasModelDesc(model, "sparse_categorical_crossentropy",
                          lambda: tfv1.train.AdamOptimizer(0.05),
                          metrics={"accuracy": "sparse_categorical_accuracy"})
    assert [(s.name, s.shape.as_list(), s.dtype) for s in desc.inputs()] == [
        ("input", [None, N_IN], tf.float32), ("target", [None], tf.int32)]
    x, label = make_data()
    val = make_data(16, seed=1)
    trainer, capture = train(desc, (x, label), callbacks=[
        ModelSaver(), InferenceRunner([val], ScalarStats(["cost", "accuracy"]))])
    names = {path: name for path, name in desc.graph_variable_names().items()
             if "seed_generator" not in path}
    assert sorted(names.values()) == sorted(SEQUENTIAL_WEIGHTS.values())
    # the graph variables started from the Keras model's weights
    for variable, value in zip(model.weights, initial):
        np.testing.assert_array_equal(capture.before[names[variable.path]], value)
    assert not np.allclose(capture.before["sequential/dense/kernel"],
                           capture.after["sequential/dense/kernel"])
    # the Keras model still has its old weights until restored
    np.testing.assert_array_equal(model.get_weights()[0], initial[0])
    restored = desc.restore_keras_weights(logdir)
    assert restored is model
    for variable in model.weights:
        np.testing.assert_array_equal(variable.numpy(), capture.after[names[variable.path]])
    accuracy = np.mean(np.argmax(model.predict(val[0], verbose=0), axis=1) == val[1])
    np.testing.assert_allclose(trainer.monitors.get_latest("validation_accuracy"), accuracy)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(loaded.predict(val[0], verbose=0), model.predict(val[0], verbose=0),
                               rtol=1e-6)


def test_restore_from_a_dict_and_missing_names():
    model = regressor()
    desc = KerasModelDesc(model, "mse", tfv1.train.GradientDescentOptimizer(0.1))
    names = desc.graph_variable_names()
    assert sorted(names.values()) == ["dense/bias", "dense/kernel", "dense_1/bias",
                                      "dense_1/kernel"]
    values = {name: np.full(tuple(v.shape), 0.5, np.float32) for v in model.weights
              for path, name in names.items() if path == v.path}
    desc.restore_keras_weights(values)
    assert all(np.all(w == 0.5) for w in model.get_weights())
    del values["dense_1/bias"]
    with pytest.raises(ValueError,
                       match=r"no value for the model's variable\(s\) \['dense_1/bias'\]"):
        desc.restore_keras_weights(values)


def test_cost_includes_the_models_regularization_losses():
    keras.utils.set_random_seed(6)
    inputs = keras.Input((N_IN,))
    outputs = keras.layers.Dense(1, kernel_regularizer=keras.regularizers.L2(0.5))(inputs)
    model = keras.Model(inputs, outputs)
    desc = KerasModelDesc(model, "mse", tfv1.train.GradientDescentOptimizer(0.1))
    x, y = make_data(4)
    y = y.astype(np.float32)[:, None]
    with tf.Graph().as_default():
        feeds = [tfv1.placeholder(s.dtype, s.shape) for s in desc.inputs()]
        with TowerContext("", is_training=True):
            cost = desc.build_graph(*feeds)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            value = sess.run(cost, dict(zip(feeds, [x, y])))
    kernel, bias = model.get_weights()
    mse = np.mean((x @ kernel + bias - y) ** 2)
    np.testing.assert_allclose(value, mse + 0.5 * np.sum(kernel ** 2), rtol=1e-5)


@pytest.mark.slow
def test_two_replicated_towers_equal_one_device():
    x, label = make_data()
    data = (x, label.astype(np.float32)[:, None])

    def run(trainer, batch):
        desc = KerasModelDesc(regressor(), "mse", lambda: tfv1.train.MomentumOptimizer(0.1, 0.9))
        return train(desc, data, trainer=trainer, batch=batch)[1].after

    one = run(None, BATCH)
    two = run(SyncMultiGPUTrainerReplicated(2), BATCH // 2)
    for name in ("dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"):
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(optimizer=keras.optimizers.Adam()), TypeError,
     "Keras optimizer .* does not work in tf.compat.v1 graphs: pass a tf.compat.v1.train"),
    (dict(optimizer=0.1), TypeError, "optimizer must be a tf.compat.v1.train.Optimizer"),
    (dict(loss="no_such_loss"), ValueError, "Unknown Keras loss name 'no_such_loss'"),
    (dict(loss=["mse", "mse"]), ValueError, "loss is a list of 2 but the model has 1 outputs"),
    (dict(metrics={"acc": "nope"}), ValueError, r"metrics\['acc'\] = 'nope' is not a Keras metric"),
    (dict(inputs=["x"]), TypeError, "inputs must be a list of tf.TensorSpec"),
    (dict(model="not a model"), TypeError, "KerasModelDesc needs a keras.Model"),
    (dict(model=keras.Sequential([keras.layers.Dense(2)])), ValueError, "is not built"),
])
def test_bad_arguments_are_refused_with_the_fix(kwargs, error, match):
    arguments = dict(model=regressor(), loss="mse",
                     optimizer=tfv1.train.GradientDescentOptimizer(0.1))
    arguments.update(kwargs)
    with pytest.raises(error, match=match):
        KerasModelDesc(**arguments)


def test_subclassed_model_needs_inputs():
    class Linear(keras.Model):
        def __init__(self):
            super().__init__()
            self.fc = keras.layers.Dense(1)

        def call(self, x):
            return self.fc(x)

    model = Linear()
    model(np.zeros((1, N_IN), np.float32))
    optimizer = tfv1.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match="does not declare its inputs.*pass inputs="):
        KerasModelDesc(model, "mse", optimizer)
    desc = KerasModelDesc(model, "mse", optimizer, inputs=[
        tf.TensorSpec([None, N_IN], tf.float32, "x"), tf.TensorSpec([None, 1], tf.float32, "y")])
    x, y = make_data()
    _, capture = train(desc, (x, y.astype(np.float32)[:, None]))
    assert sorted(desc.graph_variable_names().values()) == ["linear/dense/bias",
                                                           "linear/dense/kernel"]
    assert not np.allclose(capture.before["linear/dense/kernel"],
                           capture.after["linear/dense/kernel"])


def test_two_inputs_and_two_outputs_with_a_loss_each():
    keras.utils.set_random_seed(7)
    a, b = keras.Input((N_IN,)), keras.Input((2,))
    hidden = keras.layers.Concatenate()([keras.layers.Dense(4)(a), b])
    model = keras.Model([a, b], [keras.layers.Dense(1)(hidden),
                                 keras.layers.Dense(N_CLASSES, activation="softmax")(hidden)])
    desc = KerasModelDesc(model, ["mse", "sparse_categorical_crossentropy"],
                          tfv1.train.GradientDescentOptimizer(0.1))
    assert [(s.name, s.shape.as_list(), s.dtype) for s in desc.inputs()] == [
        ("input0", [None, N_IN], tf.float32), ("input1", [None, 2], tf.float32),
        ("target0", [None, 1], tf.float32), ("target1", [None], tf.int32)]
    x, label = make_data()
    extra = np.random.RandomState(1).randn(len(x), 2).astype(np.float32)
    trainer, capture = train(desc, (x, extra, x[:, :1], label))
    graph = trainer.graph
    assert graph.get_tensor_by_name("output0:0").shape.as_list() == [None, 1]
    assert graph.get_tensor_by_name("output1:0").shape.as_list() == [None, N_CLASSES]
    assert not np.allclose(capture.before["dense/kernel"], capture.after["dense/kernel"])
