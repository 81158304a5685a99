"""Keras 3 layers inside tfloop towers: names, sharing, updates, the training flag, towers."""
import subprocess
import sys

import keras
import numpy as np
import pytest
from distributed_support import BATCH, N_IN, STEPS, make_data
from support import scaled_timeout

import tfloop
from tfloop import (
    InferenceRunner,
    KerasTowerScope,
    ModelDesc,
    ModelSaver,
    SaverRestore,
    ScalarStats,
    TowerContext,
)
from tfloop.compat import tf, tfv1
from tfloop.train.multigpu import SyncMultiGPUTrainerParameterServer, SyncMultiGPUTrainerReplicated


class KerasMLP(ModelDesc):
    """x -> Dense(8, tanh) -> [BatchNormalization] -> [Dropout] -> Dense(1); squared error.

    ``where``: ``"graph"`` creates the layers in every ``build_graph`` call, ``"init"`` once here.
    """

    def __init__(self, where="graph", batch_norm=False, dropout=0.0, frozen_output=False,
                 lr=0.1):
        self.where, self.batch_norm, self.dropout = where, batch_norm, dropout
        self.frozen_output, self.lr = frozen_output, lr
        self.built_training = []
        if where == "init":
            self.layers = self._make_layers()

    def _make_layers(self):
        layers = [keras.layers.Dense(8, activation="tanh",
                                     kernel_initializer=keras.initializers.RandomNormal(seed=1))]
        if self.batch_norm:
            layers.append(keras.layers.BatchNormalization(momentum=0.5))
        if self.dropout:
            layers.append(keras.layers.Dropout(self.dropout))
        layers.append(keras.layers.Dense(1, trainable=not self.frozen_output,
                                         kernel_initializer=keras.initializers.RandomNormal(seed=2)))
        return layers

    def inputs(self):
        return [tf.TensorSpec([None, N_IN], tf.float32, "x"),
                tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        layers = self.layers if self.where == "init" else self._make_layers()
        h = x
        for layer in layers:
            h = layer(h)
        pred = tf.squeeze(h, 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(self.lr)


def data_fn(towers=1, steps=STEPS):
    x, y = make_data(steps)
    return lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH // towers)


class Capture(tfloop.Callback):
    """Every global variable's value before and after training, by name."""

    def _setup_graph(self):
        self.vars = tfv1.global_variables() + tfv1.local_variables()

    def _values(self):
        return {v.op.name: value for v, value in zip(self.vars, self.trainer.sess.run(self.vars))}

    def _before_train(self):
        self.before = self._values()

    def _after_train(self):
        self.after = self._values()


class VariablePerStep(tfloop.Callback):
    """A variable's value after every step."""

    def __init__(self, name):
        self.name, self.values = name, []

    def _setup_graph(self):
        self.var = next(v for v in tfv1.global_variables() if v.name == self.name)

    def _trigger_step(self):
        self.values.append(self.trainer.sess.run(self.var))


def train(model, trainer=None, towers=1, callbacks=(), steps=STEPS, **kwargs):
    capture = Capture()
    config = tfloop.TrainConfig(model=model, data=data_fn(towers, steps),
                                callbacks=[capture, *callbacks], steps_per_epoch=steps,
                                max_epoch=1, **kwargs)
    trainer = trainer or tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer, capture


def build_names(model):
    """The global variables one training tower of ``model`` creates in a fresh graph."""
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, N_IN])
        y = tfv1.placeholder(tf.float32, [None])
        with TowerContext("", is_training=True):
            model.build_graph(x, y)
        return sorted(v.op.name for v in tfv1.global_variables())


MLP_NAMES = ["dense/bias", "dense/kernel", "dense_1/bias", "dense_1/kernel"]


@pytest.mark.parametrize("where", ["graph", "init"])
def test_names_do_not_depend_on_what_the_process_built_before(where):
    for _ in range(3):          # Keras' own counters move on: dense_7, dense_8, ...
        keras.layers.Dense(2)
    assert build_names(KerasMLP(where)) == MLP_NAMES
    assert build_names(KerasMLP(where)) == MLP_NAMES
    names = build_names(KerasMLP(where, batch_norm=True, dropout=0.5))
    assert names == sorted(MLP_NAMES + [
        "batch_normalization/beta", "batch_normalization/gamma",
        "batch_normalization/moving_mean", "batch_normalization/moving_variance",
        "seed_generator/seed_generator_state"])


def test_user_names_are_kept_and_numbered_names_renumbered():
    def tower(x):
        h = keras.layers.Dense(3, name="fc_1")(x)          # not an automatic name: kept
        h = keras.layers.Dense(3, name="dense_41")(h)      # looks automatic: renumbered
        return keras.layers.Dense(3, name="dense_7")(h)

    with tf.Graph().as_default():
        with TowerContext("", is_training=True):
            tower(tfv1.placeholder(tf.float32, [None, 2]))
            scope = KerasTowerScope.current()
            assert sorted(scope.variables) == ["dense/bias", "dense/kernel", "dense_1/bias",
                                               "dense_1/kernel", "fc_1/bias", "fc_1/kernel"]
        assert KerasTowerScope.current() is None


def test_two_layers_with_the_same_name_in_one_tower_is_an_error():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 2])
        with pytest.raises(ValueError, match="both map to the name 'fc/kernel'.*distinct names"), \
                TowerContext("", is_training=True):
            keras.layers.Dense(3, name="fc")(keras.layers.Dense(2, name="fc")(x))


@pytest.mark.parametrize("where", ["graph", "init"])
def test_trains_with_the_v1_optimizer_and_restores_in_a_fresh_graph(where, logdir):
    model = KerasMLP(where)
    trainer, capture = train(model, callbacks=[ModelSaver()])
    trainable = sorted(v.op.name for v in trainer.graph.get_collection(
        tfv1.GraphKeys.TRAINABLE_VARIABLES))
    assert trainable == MLP_NAMES
    for name in MLP_NAMES:
        assert not np.allclose(capture.before[name], capture.after[name]), name
    ckpt = tf.train.latest_checkpoint(logdir)
    saved = [n for n, _ in tf.train.list_variables(ckpt) if not n.startswith("EMA/")]
    assert sorted(saved) == sorted(MLP_NAMES + ["global_step"])
    # A second model object, a fresh graph: the checkpoint restores by name.
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, N_IN])
        with TowerContext("", is_training=False):
            KerasMLP(where).build_graph(x, tfv1.placeholder(tf.float32, [None]))
        variables = tfv1.global_variables()
        restore = SaverRestore(ckpt)
        restore.setup_graph()
        with tfv1.Session() as sess:
            restore.init(sess)
            for v, value in zip(variables, sess.run(variables)):
                np.testing.assert_array_equal(value, capture.after[v.op.name])


def test_frozen_layer_is_not_trained():
    trainer, capture = train(KerasMLP("init", frozen_output=True))
    trainable = sorted(v.op.name for v in trainer.graph.get_collection(
        tfv1.GraphKeys.TRAINABLE_VARIABLES))
    assert trainable == ["dense/bias", "dense/kernel"]
    for name in ("dense_1/kernel", "dense_1/bias"):
        np.testing.assert_array_equal(capture.before[name], capture.after[name])
    assert not np.allclose(capture.before["dense/kernel"], capture.after["dense/kernel"])


@pytest.mark.parametrize("where", ["graph", "init"])
def test_batch_norm_moving_statistics_update_every_step(where):
    recorder = VariablePerStep("batch_normalization/moving_mean:0")
    train(KerasMLP(where, batch_norm=True), callbacks=[recorder])
    means = recorder.values
    assert len(means) == STEPS
    for before, after in zip([np.zeros(8)] + means, means):
        assert not np.allclose(before, after)


@pytest.mark.parametrize("where", ["graph", "init"])
def test_dropout_follows_each_towers_training_flag(where):
    """Dropout created in __init__ (eagerly) used to fail: its seed state was an eager tensor."""
    eager_layer = keras.layers.Dropout(0.5)
    with tf.Graph().as_default():
        x = tf.ones([4, 64])
        outputs = {}
        for name, training in [("", True), ("predict", False)]:
            with TowerContext(name, is_training=training):
                layer = eager_layer if where == "init" else keras.layers.Dropout(0.5)
                outputs[name] = layer(x)
        updates = tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)
        assert len(updates) == 1        # the training tower's seed advance; none for "predict"
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            first = sess.run(outputs[""])
            assert sorted(np.unique(first)) == [0.0, 2.0]
            np.testing.assert_array_equal(sess.run(outputs[""]), first)  # seed not yet advanced
            sess.run(updates)
            assert not np.array_equal(sess.run(outputs[""]), first)
            np.testing.assert_array_equal(sess.run(outputs["predict"]), np.ones([4, 64]))


def test_dropout_seed_advances_once_per_training_step():
    _, capture = train(KerasMLP("init", dropout=0.5))
    before = capture.before["seed_generator/seed_generator_state"]
    after = capture.after["seed_generator/seed_generator_state"]
    assert after.tolist() == [before[0], before[1] + STEPS]


def test_inference_tower_uses_the_trained_weights_and_creates_none():
    x, y = make_data(2)
    stats = ScalarStats("cost")
    trainer, capture = train(KerasMLP("graph", batch_norm=True),
                             callbacks=[InferenceRunner([(x, y)], stats)])
    assert sorted(capture.after) == sorted(capture.before)
    names = [v.op.name for v in trainer.graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)]
    assert not [n for n in names if n.startswith("InferenceTower")]
    w = {k: v for k, v in capture.after.items()}
    h = np.tanh(x @ w["dense/kernel"] + w["dense/bias"])
    h = (h - w["batch_normalization/moving_mean"]) / np.sqrt(
        w["batch_normalization/moving_variance"] + 1e-3)
    h = h * w["batch_normalization/gamma"] + w["batch_normalization/beta"]
    pred = (h @ w["dense_1/kernel"] + w["dense_1/bias"])[:, 0]
    expected = np.mean((pred - y) ** 2)
    np.testing.assert_allclose(trainer.monitors.get_latest("validation_cost"), expected, rtol=1e-5)


def reference_values(where):
    return train(KerasMLP(where))[1].after


@pytest.mark.slow
@pytest.mark.parametrize("where", ["graph", "init"])
@pytest.mark.parametrize("make_trainer", [
    lambda: SyncMultiGPUTrainerReplicated(2), lambda: SyncMultiGPUTrainerParameterServer(2)],
    ids=["replicated", "parameter_server"])
def test_two_towers_equal_one_device_on_the_combined_batch(where, make_trainer):
    trainer, capture = train(KerasMLP(where), trainer=make_trainer(), towers=2)
    reference = reference_values(where)
    for name in MLP_NAMES:
        np.testing.assert_allclose(capture.after[name], reference[name], rtol=1e-5, atol=1e-6)
    trainable = sorted(v.op.name for v in trainer.graph.get_collection(
        tfv1.GraphKeys.TRAINABLE_VARIABLES))
    assert trainable == MLP_NAMES
    copies = sorted(n for n in capture.after if n.startswith("tower"))
    if isinstance(trainer, SyncMultiGPUTrainerReplicated):
        assert copies == sorted(f"tower1/{n}" for n in MLP_NAMES)
        for name in copies:
            np.testing.assert_array_equal(capture.after[name], capture.after[name[7:]])
    else:
        assert copies == []


@pytest.mark.parametrize("make_trainer", [
    pytest.param(lambda: SyncMultiGPUTrainerReplicated(2), id="replicated"),
    pytest.param(lambda: SyncMultiGPUTrainerParameterServer(2), id="parameter_server",
                 marks=pytest.mark.slow)])
def test_two_towers_with_batch_norm_and_dropout(make_trainer):
    x, y = make_data(2)
    recorder = VariablePerStep("batch_normalization/moving_mean:0")
    trainer, capture = train(KerasMLP("init", batch_norm=True, dropout=0.5), trainer=make_trainer(),
                             towers=2, callbacks=[recorder, InferenceRunner([(x, y)],
                                                                            ScalarStats("cost"))])
    names = sorted(n for n in capture.after if not n.startswith(("tower", "EMA/")))
    assert names == sorted(MLP_NAMES + [
        "batch_normalization/beta", "batch_normalization/gamma",
        "batch_normalization/moving_mean", "batch_normalization/moving_variance",
        "global_step", "seed_generator/seed_generator_state"])
    assert not [n for n in capture.after if n.startswith("tower") and "seed_generator" in n]
    assert len(recorder.values) == STEPS
    assert not np.allclose(recorder.values[0], recorder.values[-1])
    seed = capture.after["seed_generator/seed_generator_state"]
    assert seed[1] == capture.before["seed_generator/seed_generator_state"][1] + STEPS
    assert np.isfinite(trainer.monitors.get_latest("validation_cost"))


@pytest.mark.parametrize("where", ["graph", "init"])
def test_offline_predictor_in_the_same_process_loads_the_checkpoint(where, logdir):
    _, capture = train(KerasMLP(where), callbacks=[ModelSaver()])
    keras.layers.Dense(2)          # more Keras objects built in between
    predictor = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=KerasMLP(where), session_init=tfloop.SmartInit(logdir), input_names=["x"],
        output_names=["pred"]))
    x, _ = make_data(1)
    w = capture.after
    expected = (np.tanh(x @ w["dense/kernel"] + w["dense/bias"]) @ w["dense_1/kernel"]
                + w["dense_1/bias"])[:, 0]
    np.testing.assert_allclose(predictor(x)[0], expected, rtol=1e-5, atol=1e-6)


def test_an_explicit_training_argument_wins_and_does_not_leak_to_later_layers():
    with tf.Graph().as_default():
        x = tf.ones([4, 64])
        with TowerContext("", is_training=True):
            off = keras.layers.Dropout(0.5)(x, training=False)
            on = keras.layers.Dropout(0.5)(x)
            nested_off = keras.Sequential([keras.layers.Dropout(0.5)])(x, training=False)
            nested_on = keras.Sequential([keras.layers.Dropout(0.5)])(x)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            off, on, nested_off, nested_on = sess.run([off, on, nested_off, nested_on])
    np.testing.assert_array_equal(off, np.ones([4, 64]))
    np.testing.assert_array_equal(nested_off, np.ones([4, 64]))
    assert sorted(np.unique(on)) == sorted(np.unique(nested_on)) == [0.0, 2.0]


def test_tf_keras_layers_are_the_same_keras():
    with tf.Graph().as_default():
        with TowerContext("", is_training=True):
            tf.keras.layers.Dense(3)(tfv1.placeholder(tf.float32, [None, 2]))
            assert sorted(KerasTowerScope.current().variables) == ["dense/bias", "dense/kernel"]


def test_a_layer_made_in_another_graph_outside_a_tower_starts_from_its_initial_values():
    with tf.Graph().as_default():
        layer = keras.layers.Dense(3, kernel_initializer="ones", bias_initializer="zeros")
        layer(tfv1.placeholder(tf.float32, [None, 2]))
        dropout = keras.layers.Dropout(0.5, seed=3)      # its seed state: a variable of this graph
    with tf.Graph().as_default():
        with TowerContext("", is_training=True):
            y = dropout(layer(tf.ones([4, 2])))
            variables = KerasTowerScope.current().variables
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            np.testing.assert_array_equal(sess.run(variables["dense/kernel"]), np.ones([2, 3]))
            assert sess.run(variables["seed_generator/seed_generator_state"]).tolist() == [3, 0]
            assert sorted(np.unique(sess.run(y))) == [0.0, 4.0]


def test_another_training_tower_drops_other_units_at_every_step():
    layer = keras.layers.Dropout(0.5)
    with tf.Graph().as_default():
        x = tf.ones([4, 64])
        with TowerContext("", is_training=True):
            first = layer(x)
        with TowerContext("tower1", is_training=True, index=1):
            second = layer(x)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            (a1, b1), (a2, b2) = sess.run([first, second]), sess.run([first, second])
    np.testing.assert_array_equal(a1, a2)       # the first tower's seed advances with UPDATE_OPS
    assert not np.array_equal(a1, b1) and not np.array_equal(b1, b2)


_NAMES_SCRIPT = """
import sys
import keras
if sys.argv[1] == "import":
    import tfloop.models  # noqa: F401
from tfloop.compat import tf, tfv1
from tfloop.tfutils.tower import TowerContext
assert ("tfloop.models" in sys.modules) == (sys.argv[1] == "import")
keras.layers.Dense(2)            # Keras numbers its layers process-wide: this one is "dense"
graph = tf.Graph()
with graph.as_default(), TowerContext("", is_training=True):
    keras.layers.Dense(4)(tfv1.placeholder(tf.float32, [None, 3]))
    print(sorted(v.op.name for v in tfv1.global_variables()))
"""


@pytest.mark.slow
def test_keras_variable_names_do_not_depend_on_what_was_imported():
    """Every tower enters the Keras scope itself: importing tfloop.models changes no name."""
    names = {}
    for variant in ("import", "no-import"):
        done = subprocess.run([sys.executable, "-c", _NAMES_SCRIPT, variant],
                              capture_output=True, text=True, timeout=scaled_timeout(60))
        assert done.returncode == 0, done.stderr[-2000:]
        names[variant] = done.stdout.strip().splitlines()[-1]
    assert names["import"] == names["no-import"] == "['dense/bias', 'dense/kernel']"
