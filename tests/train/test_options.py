"""RunOptions: one home for the run-wide options, applied by the trainer whichever way the run is
assembled. The same seeded float16 model trained through ``launch_train_with_config``, through
``setup_graph`` + ``train_with_defaults`` (the Trainer docstring's way) and through
``KerasModel.fit`` gets the same options applied."""
import re

import keras
import numpy as np
import pytest
from precision_support import ConvNet, StepGraph, assert_default_loss_scale, images
from support import LinearModel, make_regression_data

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.contrib.keras import KerasModel

OPTIONS = {"seed": 3, "mixed_precision": "float16"}
STEPS = 4


def make_dataset():
    """Shuffled without a seed of its own: its order comes from the graph's seed."""
    x, y = images(16)
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(16).batch(4).repeat()


def graph_text(trainer):
    """The trainer's graph as text: its nodes in order, then its functions sorted, with the
    process-wide counters that TensorFlow appends to the names of cond functions
    (``..._cond_true_205``, ``..._cond_true_43_grad_207``, which also order the functions) and
    to the tokens of Python functions in the graph (``pyfunc_12``: ModelSaver's writer) taken
    out."""
    graph_def = trainer.graph.as_graph_def()

    def text(proto):
        named = re.sub(r"_cond_(true|false)(_\d+|_grad|_rewritten)*",
                       lambda m: re.sub(r"_\d+", "", m.group(0)), str(proto))
        return re.sub(r'"pyfunc_\d+"', '"pyfunc"', named)
    return [text(node) for node in graph_def.node] + \
        sorted(text(function) for function in graph_def.library.function)


def checkpoint_values(directory):
    reader = tf.train.load_checkpoint(tf.train.latest_checkpoint(directory))
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}


def defaults(directory, probe):
    """What both ConvNet runs get: a final checkpoint (ModelSaver's, before the probe's extra
    step), no monitors."""
    return {"callbacks": [tfloop.ModelSaver(checkpoint_dir=directory), probe], "monitors": [],
            "steps_per_epoch": STEPS, "max_epoch": 1}


def through_launch(directory, **options):
    probe = StepGraph()
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=ConvNet(), data=tfloop.DatasetInput(make_dataset), **defaults(directory, probe),
        **options), trainer)
    return trainer, probe


def through_setup_graph(directory, **options):
    probe = StepGraph()
    model = ConvNet()
    trainer = tfloop.SimpleTrainer()
    trainer.set_options(tfloop.RunOptions(**options))
    trainer.setup_graph(model.get_input_signature(), tfloop.DatasetInput(make_dataset),
                        model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(**defaults(directory, probe))
    return trainer, probe


@pytest.mark.slow
def test_launch_and_setup_graph_give_the_same_graph_and_checkpoint(tmp_path):
    launched, launched_probe = through_launch(str(tmp_path / "launch"), **OPTIONS)
    built, built_probe = through_setup_graph(str(tmp_path / "setup_graph"), **OPTIONS)
    assert graph_text(launched) == graph_text(built)
    first = checkpoint_values(str(tmp_path / "launch"))
    second = checkpoint_values(str(tmp_path / "setup_graph"))
    assert "loss_scale/scale" in first and first.keys() == second.keys()
    assert all(first[name].tobytes() == second[name].tobytes() for name in first)
    for probe in (launched_probe, built_probe):
        assert probe.reduced["float16"] >= 5
        assert_default_loss_scale(probe)
    # The seed is what made them equal: another seed starts from other weights.
    through_setup_graph(str(tmp_path / "other"), seed=4, mixed_precision="float16")
    other = checkpoint_values(str(tmp_path / "other"))
    assert other["conv/W"].tobytes() != first["conv/W"].tobytes()


@pytest.mark.slow
def test_xla_reaches_the_session_of_the_setup_graph_way():
    probe = StepGraph()
    model = ConvNet()
    trainer = tfloop.SimpleTrainer()
    trainer.set_options(tfloop.RunOptions(xla=True))
    trainer.setup_graph(model.get_input_signature(), tfloop.DatasetInput(make_dataset),
                        model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[probe], monitors=[], steps_per_epoch=2, max_epoch=1)
    assert probe.xla > 0


N_IN, N_CLASSES = 4, 3


def keras_data():
    rng = np.random.RandomState(0)
    x = rng.randn(32, N_IN).astype(np.float32)
    y = np.eye(N_CLASSES, dtype=np.float32)[rng.randint(0, N_CLASSES, 32)]
    return tfloop.DatasetInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).shuffle(32).batch(8).repeat())


def get_model(features):
    return keras.Sequential([keras.layers.InputLayer(input_tensor=features),
                             keras.layers.Dense(16, activation="relu"),
                             keras.layers.Dense(N_CLASSES, activation="softmax")])


def through_keras_model(directory, **options):
    probe = StepGraph()
    model = KerasModel(get_model,
                       input_signature=[tf.TensorSpec([None, N_IN], tf.float32, "features")],
                       target_signature=[tf.TensorSpec([None, N_CLASSES], tf.float32, "labels")],
                       input=keras_data(), trainer=tfloop.SimpleTrainer(), **options)
    model.compile(tfv1.train.GradientDescentOptimizer(0.1), loss="categorical_crossentropy")
    model.fit(callbacks=[tfloop.ModelSaver(checkpoint_dir=directory), probe], monitors=[],
              steps_per_epoch=STEPS, max_epoch=1)
    return model, probe


@pytest.mark.slow
def test_keras_model_applies_the_options(tmp_path):
    model, probe = through_keras_model(str(tmp_path / "a"), **OPTIONS)
    assert model.trainer.options == tfloop.RunOptions(**OPTIONS)
    assert probe.reduced["float16"] >= 2
    assert_default_loss_scale(probe)
    _, again = through_keras_model(str(tmp_path / "b"), options=tfloop.RunOptions(**OPTIONS))
    first, second = checkpoint_values(str(tmp_path / "a")), checkpoint_values(str(tmp_path / "b"))
    assert "loss_scale/scale" in first and first.keys() == second.keys()
    assert all(first[name].tobytes() == second[name].tobytes() for name in first)
    through_keras_model(str(tmp_path / "c"), seed=4, mixed_precision="float16")
    other = checkpoint_values(str(tmp_path / "c"))
    kernel = next(name for name in first if name.endswith("dense/kernel"))
    assert other[kernel].tobytes() != first[kernel].tobytes()


def test_options_of_a_keras_model_are_given_once():
    with pytest.raises(ValueError, match=r"KerasModel: give options= or seed=, not both"):
        through_keras_model(None, seed=1, options=tfloop.RunOptions())
    with pytest.raises(TypeError, match=r"KerasModel: options must be a RunOptions"):
        through_keras_model(None, options={"seed": 1})


def test_run_options_check_every_value():
    with pytest.raises(TypeError, match=r"RunOptions: seed must be an int"):
        tfloop.RunOptions(seed="1")
    with pytest.raises(TypeError, match=r"RunOptions: deterministic must be True or False"):
        tfloop.RunOptions(deterministic=1)
    with pytest.raises(ValueError, match=r"mixed_precision='half' is not a precision"):
        tfloop.RunOptions(mixed_precision="half")
    with pytest.raises(ValueError, match=r"xla=1: use True"):
        tfloop.RunOptions(xla=1)
    with pytest.raises(ValueError, match=r"steps_per_run must be an int >= 1, got 0"):
        tfloop.RunOptions(steps_per_run=0)
    assert tfloop.RunOptions(seed=np.int64(2)).seed == 2


def test_options_are_set_before_the_graph_is_built():
    model = LinearModel()
    trainer = tfloop.SimpleTrainer()
    with pytest.raises(TypeError, match=r"set_options needs a RunOptions"):
        trainer.set_options({"seed": 0})
    x, y = make_regression_data(12)
    trainer.setup_graph(model.get_input_signature(), tfloop.FeedInput([(x, y)]),
                        model.build_graph, model.get_optimizer)
    with pytest.raises(RuntimeError, match=r"set_options must be called before setup_graph"):
        trainer.set_options(tfloop.RunOptions(seed=0))


def test_steps_per_run_needs_a_trainer_that_loops():
    trainer = tfloop.SyncMultiGPUTrainerReplicated(2)
    with pytest.raises(TypeError, match=r"SyncMultiGPUTrainerReplicated does not support "
                                        r"steps_per_run > 1 \(got 2\); use SimpleTrainer"):
        trainer.set_options(tfloop.RunOptions(steps_per_run=2))
    simple = tfloop.SimpleTrainer(steps_per_run=3)
    simple.set_options(tfloop.RunOptions(seed=0))
    assert simple.steps_per_run == 3      # None keeps the trainer's own


def test_the_users_session_creator_is_not_changed():
    creator = tfloop.NewSessionCreator(config=tfv1.ConfigProto(intra_op_parallelism_threads=1))
    before = creator.config.SerializeToString()
    trainer = through_launch_with(creator)
    assert creator.config.SerializeToString() == before
    assert trainer.sess is not None


def through_launch_with(creator):
    trainer = tfloop.SimpleTrainer()
    x, y = make_regression_data(12)
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=LinearModel(), data=tfloop.FeedInput([(x, y)]), session_creator=creator,
        monitors=[], extra_callbacks=[], steps_per_epoch=1, max_epoch=1, xla=True), trainer)
    return trainer


def test_the_config_hands_its_options_to_the_trainer():
    config = tfloop.TrainConfig(model=LinearModel(), data=[(np.zeros((1, 3)), np.zeros((1, 1)))],
                                seed=5, xla=True, steps_per_run=1)
    assert config.options == tfloop.RunOptions(seed=5, xla=True, steps_per_run=1)
    assert (config.seed, config.xla, config.mixed_precision) == (5, True, None)
