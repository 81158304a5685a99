"""``inputs()`` in tensorpack 0.9's style, returning ``tf.placeholder``s, wherever a signature is
read: training, a trainer set up by hand, ``PredictConfig``, ``OfflinePredictor`` and export.
tensorpack called ``inputs()`` in a temporary graph of its own, so the placeholders worked outside
any graph (in eager mode) and never landed in the training graph."""
import numpy as np
import pytest
from support import batches, make_regression_data

import tfloop
from tfloop import tfv1 as tf
from tfloop.compat import tf as tf2


class PlaceholderModel(tfloop.ModelDesc):
    def inputs(self):
        return [tf.placeholder(tf.float32, (None, 3), "x"),
                tf.placeholder(tf.float32, (None,), "y")]

    def build_graph(self, x, y):
        w = tf.get_variable("w", [3, 1], initializer=tf.zeros_initializer())
        pred = tf.squeeze(tf.matmul(x, w), 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tf.train.GradientDescentOptimizer(0.1)


def data():
    return tfloop.FeedInput(batches(*make_regression_data(12), 4))


def test_the_signature_is_read_outside_any_graph():
    assert tf2.executing_eagerly()
    signature = PlaceholderModel().get_input_signature()
    assert signature == [tf2.TensorSpec((None, 3), tf.float32, "x"),
                         tf2.TensorSpec((None,), tf.float32, "y")]
    assert PlaceholderModel().get_inputs_desc() == signature       # tensorpack 0.9's name
    assert PlaceholderModel().input_names == ["x", "y"]
    assert tf2.executing_eagerly()


def test_training_builds_no_stray_placeholder(logdir):
    trainer = tfloop.SimpleTrainer()
    config = tfloop.TrainConfig(model=PlaceholderModel(), data=data(), max_epoch=2,
                                callbacks=[tfloop.ModelSaver()])
    tfloop.launch_train_with_config(config, trainer)
    placeholders = sorted(op.name for op in trainer.graph.get_operations()
                          if op.type == "Placeholder" and op.name in ("x", "y", "x_1", "y_1"))
    assert placeholders == ["x", "y"]          # FeedInput's, fed at every step
    assert trainer.global_step == 6


@pytest.mark.slow
def test_predict_config_offline_predictor_and_export(logdir, tmp_path):
    tfloop.launch_train_with_config(
        tfloop.TrainConfig(model=PlaceholderModel(), data=data(), max_epoch=2,
                           callbacks=[tfloop.ModelSaver()]), tfloop.SimpleTrainer())
    w = tf.train.load_variable(logdir, "w")
    config = tfloop.PredictConfig(model=PlaceholderModel(), session_init=tfloop.SmartInit(logdir),
                                  input_names=["x"], output_names=["pred"])
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    pred, = tfloop.OfflinePredictor(config)(x)
    np.testing.assert_allclose(pred, (x @ w)[:, 0], rtol=1e-6)
    exporter = tfloop.ModelExporter(config)
    exporter.export_compact(str(tmp_path / "compact.pb"))
    graph_def = tf.GraphDef.FromString((tmp_path / "compact.pb").read_bytes())
    with tf2.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        with tf.Session(graph=graph) as sess:
            np.testing.assert_allclose(sess.run("pred:0", {"x:0": x}), pred, rtol=1e-6)
    exporter.export_serving(str(tmp_path / "serving"))
    served = tf2.saved_model.load(str(tmp_path / "serving"))
    out = served.signatures["serving_default"](x=tf2.constant(x))
    np.testing.assert_allclose(next(iter(out.values())).numpy(), pred, rtol=1e-6)


def test_a_trainer_set_up_by_hand(logdir):
    # tensorpack 0.9 projects set up trainers themselves (e.g. HorovodTrainer):
    model = PlaceholderModel()
    trainer = tfloop.SimpleTrainer()
    trainer.setup_graph(model.get_input_signature(), data(), model.build_graph,
                        model.get_optimizer)
    trainer.train_with_defaults(callbacks=[tfloop.ModelSaver()], steps_per_epoch=3, max_epoch=1)
    assert tf.train.latest_checkpoint(logdir).endswith("model-3")


class DefaultedModel(PlaceholderModel):
    """Inputs as ``placeholder_with_default`` and tensorpack 0.9's ``InputDesc``."""

    def inputs(self):
        return [tfloop.InputDesc(tf.float32, (None, 3), "x"),
                tf.placeholder_with_default(np.zeros([1], np.float32), (None,), "y")]


def test_placeholder_with_default_and_input_desc():
    assert DefaultedModel().get_input_signature() == [tf2.TensorSpec((None, 3), tf.float32, "x"),
                                                     tf2.TensorSpec((None,), tf.float32, "y")]
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(
        tfloop.TrainConfig(model=DefaultedModel(), data=data(), max_epoch=1), trainer)
    assert trainer.global_step == 3
