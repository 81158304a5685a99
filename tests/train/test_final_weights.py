"""trainer.get_predictor after training: the final weights, kept in memory, no checkpoint."""
import keras
import numpy as np
import pytest
from distributed_support import MLP, CaptureVariables, make_data, train_script
from support import LinearModel, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.train.multigpu import SyncMultiGPUTrainerReplicated

X_NEW, _ = make_regression_data(7, seed=11)


class FinalW(tfloop.Callback):
    """The value of ``w`` in the training session when training ends."""

    def _setup_graph(self):
        self.variable = next(v for v in tfv1.global_variables() if v.op.name == "w")

    def _after_train(self):
        self.value = self.trainer.sess.run(self.variable)


class BatchNormModel(tfloop.ModelDesc):
    """A layer, BatchNorm (moving statistics: not trainable) and Adam (slots in the checkpoint)."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        hidden = tfloop.BatchNorm("bn", tfloop.FullyConnected("fc", x, 4))
        pred = tf.squeeze(tfloop.FullyConnected("out", hidden, 1), 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tfv1.train.AdamOptimizer(0.05)


def test_predicts_with_the_weights_training_ended_with_without_a_checkpoint():
    final = FinalW()
    trainer = train_linear([final], max_epoch=2)
    assert trainer.training_ended and trainer.logdir is None
    predictor = trainer.get_predictor(["x"], ["pred", "w"])
    pred, w = predictor(X_NEW)
    np.testing.assert_array_equal(w, final.value)
    np.testing.assert_allclose(pred, (X_NEW @ final.value)[:, 0], rtol=1e-6)
    assert not np.allclose(final.value, 0)      # trained: w starts at zeros
    np.testing.assert_array_equal(trainer.final_weights["w"], final.value)
    # The graph is built once per device; another device gets a graph of its own.
    again = trainer.get_predictor(["x"], ["pred"])
    assert again.sess is predictor.sess
    on_cpu = trainer.get_predictor(["x"], ["pred"], device=-1)
    assert on_cpu.sess is not predictor.sess
    np.testing.assert_allclose(on_cpu(X_NEW)[0], pred, rtol=1e-6)


@pytest.mark.slow
def test_equals_a_predictor_from_the_last_checkpoint(tmp_path):
    x, y = make_regression_data(24)
    config = tfloop.TrainConfig(model=BatchNormModel(), data=batches(x, y, 8), max_epoch=2,
                                callbacks=[tfloop.ModelSaver()], logdir=str(tmp_path))
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    after_training, = trainer.get_predictor(["x"], ["pred"])(X_NEW)
    offline, = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=BatchNormModel(), session_init=str(tmp_path), input_names=["x"],
        output_names=["pred"]))(X_NEW)
    np.testing.assert_array_equal(after_training, offline)
    weights = trainer.final_weights
    assert "bn/mean/EMA" in weights and "bn/variance/EMA" in weights
    assert not [name for name in weights if name.endswith(("/Adam", "/Adam_1"))]
    assert "beta1_power" not in weights


def test_a_stopped_or_interrupted_training_keeps_the_weights_it_stopped_at():
    class StopAfter(tfloop.Callback):
        def __init__(self, error):
            self.error = error

        def _trigger_step(self):
            if self.global_step == 4:
                raise self.error

    for error, raised in [(tfloop.StopTraining("enough"), None),
                          (KeyboardInterrupt(), KeyboardInterrupt)]:
        final = FinalW()
        trainer = tfloop.SimpleTrainer()
        if raised is None:
            train_linear([StopAfter(error), final], max_epoch=3, trainer=trainer)
        else:
            with pytest.raises(raised):
                train_linear([StopAfter(error), final], max_epoch=3, trainer=trainer)
        assert trainer.global_step == 4
        w, = trainer.get_predictor(["x"], ["w"])(X_NEW)
        np.testing.assert_array_equal(w, final.value)


def test_no_final_weights_after_a_failure_or_when_told_not_to_keep_them():
    class Fail(tfloop.Callback):
        def _trigger_epoch(self):
            raise ValueError("boom")

    trainer = tfloop.SimpleTrainer()
    with pytest.raises(ValueError, match="boom"):
        train_linear([Fail()], max_epoch=1, trainer=trainer)
    assert trainer.final_weights is None
    with pytest.raises(RuntimeError, match=r"which were not kept: training failed \(ValueError: "
                                           r"boom\).*OfflinePredictor\(PredictConfig"):
        trainer.get_predictor(["x"], ["pred"])

    trainer = tfloop.SimpleTrainer()
    trainer.keep_final_weights = False
    train_linear(max_epoch=1, trainer=trainer)
    assert trainer.final_weights is None
    with pytest.raises(RuntimeError, match="not kept: trainer.keep_final_weights is False"):
        trainer.get_predictor(["x"], ["pred"])


def test_a_predictor_made_during_training_says_to_ask_again_after_it():
    class Make(tfloop.Callback):
        def _setup_graph(self):
            self.pred = self.trainer.get_predictor(["x"], ["pred"])

    make = Make()
    trainer = train_linear([make], max_epoch=1)
    with pytest.raises(RuntimeError, match="during training runs in the training session, which "
                                           "is closed now: call trainer.get_predictor again"):
        make.pred(X_NEW)
    new, = trainer.get_predictor(["x"], ["pred"])(X_NEW)
    np.testing.assert_allclose(new, (X_NEW @ trainer.final_weights["w"])[:, 0], rtol=1e-6)
    with pytest.raises(KeyError, match="no tensor named 'prd'.*Close matches: pred"):
        trainer.get_predictor(["x"], ["prd"])


@pytest.mark.slow
def test_replicated_towers_predict_with_tower_zero_weights():
    capture = CaptureVariables()
    trainer = SyncMultiGPUTrainerReplicated(2)
    train_script(trainer, towers_per_step=2, capture=capture, save=False)
    x, _ = make_data()
    pred, = trainer.get_predictor(["x"], ["pred"])(x[:5])
    assert not [name for name in trainer.final_weights if name.startswith("tower")]
    values = capture.values
    hidden = np.tanh(x[:5] @ values["fc1/W"] + values["fc1/b"])
    np.testing.assert_allclose(pred, (hidden @ values["fc2/W"])[:, 0], rtol=1e-5)
    assert isinstance(trainer.model, MLP)


def test_a_run_that_had_already_finished_trained_nothing_to_predict_with(tmp_path):
    def run():
        x, y = make_regression_data(12)
        trainer = tfloop.SimpleTrainer()
        tfloop.launch_train_with_config(tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=batches(x, y, 4), max_epoch=1, logdir=str(tmp_path),
            callbacks=[tfloop.ModelSaver()]), trainer)
        return trainer

    run()
    trainer = run()
    with pytest.raises(RuntimeError, match="not kept: the run of .*model-3 had already finished"):
        trainer.get_predictor(["x"], ["pred"])


def test_a_variable_only_inference_creates_is_named():
    class InferenceOnly(LinearModel):
        def build_graph(self, x, y):
            cost = super().build_graph(x, y)
            if not get_current_tower_context().is_training:
                tfv1.get_variable("calibration", [], initializer=tfv1.ones_initializer())
            return cost

    trainer = train_linear(model=InferenceOnly(), max_epoch=1)
    with pytest.raises(ValueError, match="has variable\\(s\\) calibration that the final weights "
                                         "of training do not hold \\(training had"):
        trainer.get_predictor(["x"], ["pred"])


@pytest.mark.slow
def test_a_keras_model_predicts_after_training_as_keras_does_with_the_final_weights():
    keras.utils.set_random_seed(4)
    model = keras.Sequential([
        keras.Input((3,)), keras.layers.Dense(8, activation="relu"),
        keras.layers.BatchNormalization(), keras.layers.Dropout(0.3), keras.layers.Dense(1)])
    desc = tfloop.KerasModelDesc(model, "mse", lambda: tfv1.train.AdamOptimizer(0.05))
    x, y = make_regression_data(24)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=desc, data=lambda: tf.data.Dataset.from_tensor_slices((x, y[:, None])).batch(8),
        max_epoch=2), trainer)
    after_training, = trainer.get_predictor(["input"], ["output"])(X_NEW)
    desc.restore_keras_weights(trainer.final_weights)
    np.testing.assert_allclose(after_training, model.predict(X_NEW, verbose=0), rtol=1e-5,
                               atol=1e-6)
