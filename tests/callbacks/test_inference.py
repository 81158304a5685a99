"""Inferencers, run by an InferenceRunner on a model whose weights stay fixed (NoOpTrainer)."""
import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score
from support import batches, make_regression_data

import tfloop
from tfloop import (
    BinaryClassificationStats,
    ClassificationError,
    Inferencer,
    InferenceRunner,
    ModelDesc,
    ScalarStats,
)
from tfloop.callbacks import inference
from tfloop.compat import tf, tfv1

W = np.array([[0.5], [1.0], [-1.0]], dtype=np.float32)
X_VAL, Y_VAL = make_regression_data(10, seed=7)
PRED = (X_VAL @ W)[:, 0]


class Probe(ModelDesc):
    """Fixed-weight regression whose named tensors feed the inferencers under test."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3, 1], initializer=tfv1.constant_initializer(W))
        pred = tf.squeeze(tf.matmul(x, w), 1, name="pred")
        tf.reduce_mean(x[:, 0], name="mean_x0")
        tf.cast(x[:, 0] > 0.3, tf.float32, name="wrong")
        tf.cast(pred > 0, tf.int32, name="pos_pred")
        tf.cast(y > 0, tf.int32, name="pos_label")
        tf.zeros_like(y, dtype=tf.int32, name="never")
        tf.sigmoid(pred, name="score")
        tf.cast(x > 0.3, tf.int32, name="pos_map")
        tf.cast(x + y[:, None] > 0.5, tf.int32, name="pos_label_map")
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.1)


def run_inference(infs, val_batch_size=4, max_epoch=1):
    """Run ``infs`` over X_VAL/Y_VAL in batches of ``val_batch_size``; returns the monitors."""
    runner = InferenceRunner(batches(X_VAL, Y_VAL, val_batch_size), infs)
    x, y = make_regression_data(8)
    config = tfloop.TrainConfig(model=Probe(), data=tfloop.FeedInput(batches(x, y, 4)),
                                callbacks=[runner], monitors=[], extra_callbacks=[],
                                max_epoch=max_epoch)
    trainer = tfloop.NoOpTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer.monitors


def per_batch_mean(values, batch_size):
    return np.mean([values[i:i + batch_size].mean() for i in range(0, len(values), batch_size)])


def test_scalar_stats_is_the_exact_mean_over_ragged_batches():
    monitors = run_inference([ScalarStats(["cost", "mean_x0"], prefix="val")])
    squared = (PRED - Y_VAL) ** 2
    assert monitors.get_latest("val_cost") == pytest.approx(squared.mean(), rel=1e-6)
    assert monitors.get_latest("val_mean_x0") == pytest.approx(X_VAL[:, 0].mean(), abs=1e-6)
    assert squared.mean() != pytest.approx(per_batch_mean(squared, 4), rel=1e-3)


def test_scalar_stats_names():
    monitors = run_inference([ScalarStats("cost:0", prefix=""), ScalarStats("cost")])
    assert monitors.scalar_names() == ["cost", "validation_cost"]
    assert monitors.get_latest("cost") == monitors.get_latest("validation_cost")


def test_classification_error_is_exact_over_a_ragged_last_batch():
    wrong = (X_VAL[:, 0] > 0.3).astype(np.float64)
    monitors = run_inference([ClassificationError("wrong", "val-error")])
    assert monitors.get_latest("val-error") == wrong.sum() / 10
    assert wrong.mean() != per_batch_mean(wrong, 4)


def test_classification_error_defaults_and_two_epochs():
    class Named(Probe):
        def build_graph(self, x, y):
            tf.identity(tf.cast(x[:, 0] > 0.3, tf.float32), name="incorrect_vector")
            return super().build_graph(x, y)

    runner = InferenceRunner(batches(X_VAL, Y_VAL, 3), ClassificationError())
    x, y = make_regression_data(8)
    config = tfloop.TrainConfig(model=Named(), data=batches(x, y, 4), callbacks=[runner],
                                monitors=[], extra_callbacks=[], max_epoch=2)
    trainer = tfloop.NoOpTrainer()
    tfloop.launch_train_with_config(config, trainer)
    error = (X_VAL[:, 0] > 0.3).mean()
    assert trainer.monitors.get_history("validation_error") == [(2, error), (4, error)]


def test_binary_classification_stats_match_sklearn():
    monitors = run_inference([BinaryClassificationStats("pos_pred", "pos_label")])
    pred, label = (PRED > 0).astype(int), (Y_VAL > 0).astype(int)
    assert 0 < precision_score(label, pred) < 1 and 0 < recall_score(label, pred) < 1
    assert monitors.get_latest("val_precision") == pytest.approx(precision_score(label, pred))
    assert monitors.get_latest("val_recall") == pytest.approx(recall_score(label, pred))


def test_binary_classification_stats_count_every_element_of_maps():
    # tensorpack's HED scores a per-pixel edge map this way
    monitors = run_inference([BinaryClassificationStats("pos_map", "pos_label_map")])
    pred = (X_VAL > 0.3).astype(int).ravel()
    label = (X_VAL + Y_VAL[:, None] > 0.5).astype(int).ravel()
    assert monitors.get_latest("val_precision") == pytest.approx(precision_score(label, pred))
    assert monitors.get_latest("val_recall") == pytest.approx(recall_score(label, pred))


def test_binary_classification_stats_undefined_precision_is_zero_with_a_warning(monkeypatch):
    warnings = []
    monkeypatch.setattr(inference.logger, "warning", warnings.append)
    monitors = run_inference([BinaryClassificationStats("never", "pos_label", prefix="p")])
    assert monitors.get_latest("p_precision") == 0.0
    assert monitors.get_latest("p_recall") == 0.0
    assert len(warnings) == 1 and "precision is undefined" in warnings[0]


def test_binary_classification_stats_refuse_scores():
    with pytest.raises(ValueError, match="needs 0/1 values for 'score'"):
        run_inference([BinaryClassificationStats("score", "pos_label")])


@pytest.mark.parametrize("inf, match", [
    (ScalarStats("wrong"), "wrong:0 to be a scalar"),
    (ClassificationError("cost"), "cost:0 to be a per-example vector"),
    (BinaryClassificationStats("pos_pred", "cost"), "cost:0 to hold 0/1 values per example"),
])
def test_wrong_tensor_ranks_fail_at_setup(inf, match):
    with pytest.raises(ValueError, match=match) as info:
        run_inference([inf])
    assert str(inf) in str(info.value)


class Recorder(Inferencer):
    def __init__(self, log, stats=None):
        self.log = log
        self.stats = stats

    def _setup_graph(self):
        self.log.append(("setup", [t.name for t in self.fetch_tensors], self.tower.name))

    def _get_fetches(self):
        return ["pred", "mean_x0"]

    def _before_inference(self):
        self.log.append("before")

    def _on_fetches(self, results):
        pred, mean_x0 = results
        self.log.append((pred.shape, float(mean_x0), self.batch_size))

    def _after_inference(self):
        self.log.append("after")
        return self.stats


def test_custom_inferencer_call_sequence():
    log = []
    monitors = run_inference([Recorder(log, {"custom": np.float32(2.5), "n": 3})],
                             val_batch_size=6, max_epoch=2)
    one_pass = ["before", ((6,), pytest.approx(X_VAL[:6, 0].mean()), 6),
                ((4,), pytest.approx(X_VAL[6:, 0].mean()), 4), "after"]
    assert log == [("setup", ["InferenceTower/pred:0", "InferenceTower/mean_x0:0"],
                    "InferenceTower")] + one_pass * 2
    assert monitors.get_history("custom") == [(2, 2.5), (4, 2.5)]
    assert monitors.get_latest("n") == 3.0


@pytest.mark.parametrize("stats, match", [
    ([1.0], "must return a dict"),
    ({"a": np.zeros(2)}, "must be named real scalars"),
    ({"a": "high"}, "must be named real scalars"),
    ({3: 1.0}, "must be named real scalars"),
])
def test_after_inference_result_is_checked(stats, match):
    with pytest.raises(TypeError, match=match):
        run_inference([Recorder([], stats)])


def test_inferencer_fetches_are_checked():
    class NoFetches(Inferencer):
        pass

    class BadFetches(Inferencer):
        def _get_fetches(self):
            return ["pred", 3]

    with pytest.raises(TypeError, match="NoFetches must define _get_fetches"):
        run_inference([NoFetches()])
    with pytest.raises(TypeError, match=r"BadFetches._get_fetches\(\) must be non-empty"):
        run_inference([BadFetches()])


@pytest.mark.parametrize("make, error, match", [
    (lambda: ScalarStats([]), TypeError, "ScalarStats names must be non-empty"),
    (lambda: ScalarStats(3), TypeError, "ScalarStats names must be a tensor name"),
    (lambda: ScalarStats("cost", prefix=None), TypeError, "prefix must be a string"),
    (lambda: ClassificationError("wrong", ""), TypeError, "summary_name"),
    (lambda: BinaryClassificationStats("a", None), TypeError, "must be non-empty tensor names"),
    (lambda: BinaryClassificationStats("a", "b", prefix=1), TypeError, "prefix must be a string"),
])
def test_constructor_arguments_are_checked(make, error, match):
    with pytest.raises(error, match=match):
        make()
