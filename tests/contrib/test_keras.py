"""tfloop.contrib.keras: KerasModel (compile/fit through a tfloop trainer) and
KerasPhaseCallback (the towers' Keras training phase checked at setup)."""
import keras
import numpy as np
import pytest
from support import StepValues

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.contrib.keras import KerasModel, KerasPhaseCallback, setup_keras_trainer

N_IN, N_CLASSES, BATCH = 4, 3, 8


def datapoints(n=4 * BATCH, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, N_IN).astype(np.float32)
    onehot = np.eye(N_CLASSES, dtype=np.float32)[(x[:, 0] > 0).astype(int) + (x[:, 1] > 1)]
    return [[x[i:i + BATCH], onehot[i:i + BATCH]] for i in range(0, n, BATCH)]


def get_model(features):
    model = keras.Sequential()
    model.add(keras.layers.InputLayer(input_tensor=features))
    model.add(keras.layers.Dense(8, activation="relu",
                                 kernel_regularizer=keras.regularizers.l2(0.5)))
    model.add(keras.layers.Dropout(0.5))
    model.add(keras.layers.Dense(N_CLASSES, activation="softmax"))
    return model


class Record(tfloop.Callback):
    """Records the first Dense kernel before and after training."""

    def _setup_graph(self):
        self.kernel = next(v for v in tfv1.global_variables()
                           if v.op.name == "sequential/dense/kernel")

    def _before_train(self):
        self.before = self.trainer.sess.run(self.kernel)

    def _after_train(self):
        self.after = self.trainer.sess.run(self.kernel)


def keras_model(**kwargs):
    return KerasModel(get_model,
                      input_signature=[tf.TensorSpec([None, N_IN], tf.float32, "features")],
                      target_signature=[tf.TensorSpec([None, N_CLASSES], tf.float32, "labels")],
                      input=tfloop.QueueInput(tfloop.DataFromList(datapoints())), **kwargs)


def test_compile_and_fit_train_the_model_and_validate(logdir):
    record = Record()
    M = keras_model(trainer=tfloop.SimpleTrainer())
    M.compile(optimizer=tfv1.train.GradientDescentOptimizer(0.5),
              loss="categorical_crossentropy", metrics="categorical_accuracy")
    M.fit(validation_data=tfloop.DataFromList(datapoints(2 * BATCH, seed=1)),
          steps_per_epoch=3, max_epoch=1, callbacks=[record, KerasPhaseCallback(True),
                                                     KerasPhaseCallback(False)])
    assert isinstance(M.model, keras.Model)
    assert not np.allclose(record.before, record.after)
    graph = M.trainer.graph
    # the cost: the loss named by Keras' loss name plus the model's l2 regularizer
    towers = M.trainer.towers
    assert [t.is_training for t in towers] == [True, False]
    cost, loss = towers[0]["total_cost"], towers[0]["categorical_crossentropy"]
    assert cost.op.type == "AddN" and len(cost.op.inputs) == 2 and cost.op.inputs[0] is loss
    # Dropout drops in the training tower only: the tower's flag reached the Keras layers
    dropping = {op.name.split("/")[0] for op in graph.get_operations()
                if "stateless_dropout" in op.name}
    assert dropping and "InferenceTower" not in dropping, dropping
    assert any(op.name.startswith("InferenceTower/") for op in graph.get_operations())
    # the validation tower reuses the trained variables and reports every stat
    names = sorted(v.op.name for v in graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES))
    assert names == ["sequential/dense/bias", "sequential/dense/kernel",
                     "sequential/dense_1/bias", "sequential/dense_1/kernel"]
    monitors = M.trainer.monitors
    for stat in ("categorical_crossentropy", "categorical_accuracy", "total_cost"):
        assert np.isfinite(monitors.get_latest(f"validation_{stat}")), stat
    assert 0 <= monitors.get_latest("validation_categorical_accuracy") <= 1


def test_phase_callback_refuses_a_trainer_without_training_towers():
    callback = KerasPhaseCallback(True)
    with pytest.raises(ValueError, match=r"KerasPhaseCallback\(True\) needs a trainer that builds"):
        callback.setup_graph(tfloop.NoOpTrainer())


def test_phase_callback_false_needs_an_inference_tower(logdir):
    M = keras_model(trainer=tfloop.SimpleTrainer())
    M.compile(tfv1.train.GradientDescentOptimizer(0.1), "categorical_crossentropy")
    with pytest.raises(ValueError, match=r"built no tower with is_training=False.*InferenceRunner"):
        M.fit(steps_per_epoch=1, max_epoch=1, callbacks=[KerasPhaseCallback(False)])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(get_model=3), TypeError, "get_model must be a function"),
    (dict(input_signature=None), ValueError, "needs input_signature"),
    (dict(target_signature=["labels"]), TypeError, "target_signature must be"),
    (dict(input=None), ValueError, "needs input="),
    (dict(trainer="simple"), TypeError, "trainer must be a tfloop Trainer"),
])
def test_bad_constructor_arguments_name_the_fix(kwargs, error, match):
    args = dict(get_model=get_model,
                input_signature=[tf.TensorSpec([None, N_IN], tf.float32, "features")],
                target_signature=[tf.TensorSpec([None, N_CLASSES], tf.float32, "labels")],
                input=datapoints())
    args.update(kwargs)
    with pytest.raises(error, match=match):
        KerasModel(**args)


def test_bad_compile_and_fit_calls_name_the_fix():
    M = keras_model(trainer=tfloop.SimpleTrainer())
    with pytest.raises(RuntimeError, match="before compile"):
        M.fit(steps_per_epoch=1)
    with pytest.raises(TypeError, match="tf.compat.v1.train.Optimizer"):
        M.compile(keras.optimizers.Adam(), "categorical_crossentropy")
    with pytest.raises(ValueError, match="one loss per target"):
        M.compile(tfv1.train.AdamOptimizer(), ["mse", "mse"])
    with pytest.raises(ValueError, match="not a Keras loss"):
        M.compile(tfv1.train.AdamOptimizer(), "no_such_loss")
    with pytest.raises(TypeError, match="True .training towers. or False"):
        KerasPhaseCallback(1)


@pytest.mark.slow
def test_two_training_towers_share_one_model(logdir):
    """tensorpack's default multi-GPU trainer for KerasModel: both towers call the one model."""
    M = keras_model(trainer=tfloop.SyncMultiGPUTrainerParameterServer(2))
    M.compile(tfv1.train.GradientDescentOptimizer(0.1), "categorical_crossentropy",
              "categorical_accuracy")
    M.fit(steps_per_epoch=2, max_epoch=1, callbacks=[KerasPhaseCallback(True)])
    assert [t.is_training for t in M.trainer.towers] == [True, True]
    names = sorted(v.op.name for v in
                   M.trainer.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES))
    assert names == ["sequential/dense/bias", "sequential/dense/kernel",
                     "sequential/dense_1/bias", "sequential/dense_1/kernel"]
    for stat in ("total_cost", "categorical_crossentropy", "categorical_accuracy"):
        assert np.isfinite(M.trainer.monitors.get_latest(stat)), stat


def softmax_model(features):
    return keras.Sequential([keras.layers.InputLayer(input_tensor=features),
                             keras.layers.Dense(N_CLASSES, activation="softmax")])


def softmax_keras_model(data, **kwargs):
    return KerasModel(softmax_model,
                      input_signature=[tf.TensorSpec([None, N_IN], tf.float32, "features")],
                      target_signature=[tf.TensorSpec([None, N_CLASSES], tf.float32, "labels")],
                      input=tfloop.DataFromList(data, shuffle=False),
                      trainer=tfloop.SimpleTrainer(), **kwargs)


class Weights(tfloop.Callback):
    """The Dense layer's (kernel, bias) before training and after every step."""

    def _setup_graph(self):
        found = {v.op.name: v for v in tfv1.global_variables()}
        self.vars = [found["sequential/dense/kernel"], found["sequential/dense/bias"]]
        self.values = []

    def _before_train(self):
        self.values.append(self.trainer.sess.run(self.vars))

    def _trigger_step(self):
        self.values.append(self.trainer.sess.run(self.vars))


def accuracy(x, onehot, weights):
    kernel, bias = weights
    return float(np.mean(np.argmax(x @ kernel + bias, 1) == np.argmax(onehot, 1)))


def test_metrics_are_each_batchs_own_value_in_training_and_validation(logdir):
    train, validation = datapoints(3 * BATCH, seed=3), datapoints(2 * BATCH, seed=4)
    weights, batch = Weights(), StepValues("categorical_accuracy", float)
    M = softmax_keras_model(train)
    M.compile(tfv1.train.GradientDescentOptimizer(1.0), "categorical_crossentropy",
              "categorical_accuracy")
    M.fit(validation_data=tfloop.DataFromList(validation, shuffle=False), steps_per_epoch=3,
          max_epoch=2, callbacks=[weights, batch])
    expected = [accuracy(x, y, w) for (x, y), w in zip(train * 2, weights.values)]
    np.testing.assert_allclose(batch.values, expected, atol=1e-6)
    biased = 0.0
    for value in expected:                  # the moving average, bias-corrected
        biased = 0.95 * biased + 0.05 * value
    monitors = M.trainer.monitors
    assert monitors.get_latest("categorical_accuracy") == pytest.approx(
        biased / (1 - 0.95 ** len(expected)), abs=1e-5)
    x, y = (np.concatenate(a) for a in zip(*validation))
    assert monitors.get_latest("validation_categorical_accuracy") == pytest.approx(
        accuracy(x, y, weights.values[-1]), abs=1e-6)


def test_a_metric_without_a_batch_value_is_refused():
    M = keras_model(trainer=tfloop.SimpleTrainer())
    with pytest.raises(ValueError, match=r"the Keras metric 'auc' \(AUC\) is not a mean of "
                                         r"per-example values"):
        M.compile(tfv1.train.AdamOptimizer(), "categorical_crossentropy", "auc")


def test_a_second_fit_says_how_to_train_on(logdir):
    data = datapoints(2 * BATCH, seed=5)
    M = softmax_keras_model(data)
    M.compile(tfv1.train.GradientDescentOptimizer(0.5), "categorical_crossentropy")
    weights = Weights()
    with pytest.raises(ValueError, match="steps_per_epoch"):     # refused before training
        M.fit(steps_per_epoch=0)
    M.fit(steps_per_epoch=2, max_epoch=1, callbacks=[weights, tfloop.ModelSaver()])
    with pytest.raises(RuntimeError, match=r"fit was called before on this model.*starting_epoch"):
        M.fit(steps_per_epoch=2, max_epoch=2)
    # What the message says: a new KerasModel continues from the checkpoint.
    again, restored = softmax_keras_model(data), Weights()
    again.compile(tfv1.train.GradientDescentOptimizer(0.5), "categorical_crossentropy")
    again.fit(session_init=tfloop.SmartInit(logdir), starting_epoch=2, max_epoch=2,
              steps_per_epoch=2, callbacks=[restored])
    for got, want in zip(restored.values[0], weights.values[-1]):
        np.testing.assert_array_equal(got, want)
    assert again.trainer.global_step == 4


def test_setup_keras_trainer_builds_the_graph_that_train_with_defaults_trains(logdir):
    record, trainer = Record(), tfloop.SimpleTrainer()
    M = setup_keras_trainer(
        trainer, get_model, [tf.TensorSpec([None, N_IN], tf.float32, "features")],
        [tf.TensorSpec([None, N_CLASSES], tf.float32, "labels")],
        tfloop.QueueInput(tfloop.DataFromList(datapoints())),
        tfv1.train.GradientDescentOptimizer(0.5), ["categorical_crossentropy"],
        ["categorical_accuracy"])
    assert M.trainer is trainer and isinstance(M.model, keras.Model)
    trainer.train_with_defaults(callbacks=[record], steps_per_epoch=3, max_epoch=1)
    assert trainer.global_step == 3 and not np.allclose(record.before, record.after)
    assert np.isfinite(trainer.monitors.get_latest("categorical_accuracy"))
