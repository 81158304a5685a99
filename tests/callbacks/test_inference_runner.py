"""InferenceRunner: a predict tower sharing the training variables, one exact pass per trigger."""
import logging
import os
import signal

import numpy as np
import pytest
from support import LinearModel, StepValues, batches, make_regression_data

import tfloop
from tfloop import (
    CallbackFactory,
    ClassificationError,
    DatasetInput,
    Inferencer,
    InferenceRunner,
    ModelDesc,
    PeriodicTrigger,
    ScalarStats,
    UnknownNameError,
)
from tfloop.compat import tf, tfv1
from tfloop.tfutils.tower import get_current_tower_context

N_FEATURES, N_CLASSES = 4, 10


def make_classification_data(n, seed):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, N_FEATURES).astype(np.float32)
    label = (np.abs(x[:, 0] * 3 + x[:, 1] * 2).astype(np.int32)) % N_CLASSES
    return x, label


class Classifier(ModelDesc):
    """Linear softmax classifier with dropout in training only; records each tower's mode."""

    def __init__(self):
        self.modes = []

    def inputs(self):
        return [tf.TensorSpec([None, N_FEATURES], tf.float32, "x"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        training = get_current_tower_context().is_training
        self.modes.append(training)
        if training:
            x = tf.nn.dropout(x, rate=0.5, seed=1)
        w = tfv1.get_variable("W", [N_FEATURES, N_CLASSES],
                              initializer=tfv1.random_normal_initializer(seed=3))
        b = tfv1.get_variable("b", [N_CLASSES], initializer=tfv1.zeros_initializer())
        logits = tf.matmul(x, w) + b
        for k in (1, 5):
            in_top_k = tf.nn.in_top_k(targets=label, predictions=logits, k=k)
            tf.cast(tf.logical_not(in_top_k), tf.float32, name=f"wrong-top{k}")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")
        tfv1.summary.scalar("cost-summary", cost)
        return cost

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(1.0)


def numpy_errors(weights, x, label, batch_size=None):
    """Top-1 and top-5 errors of the weights on (x, label): exact, or averaged per batch."""
    logits = x @ weights["W"] + weights["b"]
    rank = (logits > logits[np.arange(len(label)), label][:, None]).sum(axis=1)
    wrong = {k: (rank >= k).astype(np.float64) for k in (1, 5)}
    if batch_size is None:
        return {k: v.mean() for k, v in wrong.items()}
    return {k: np.mean([v[i:i + batch_size].mean() for i in range(0, len(v), batch_size)])
            for k, v in wrong.items()}


class CountingBatches:
    """A re-iterable list of batches that counts the datapoints handed out."""

    def __init__(self, data):
        self.data = data
        self.served = 0

    def __iter__(self):
        for dp in self.data:
            self.served += 1
            yield dp

    def __len__(self):
        return len(self.data)


def weight_recorder(log):
    """A callback that records the trainable variables' values at each trigger."""
    def setup(self):
        self.variables = {v.op.name: v for v in tfv1.trainable_variables()}

    def trigger(self):
        log.append(self.trainer.sess.run(self.variables))
    return CallbackFactory(setup_graph=setup, trigger=trigger)


def train(model, callbacks, data, max_epoch=2, trainer=None, steps_per_epoch=None):
    config = tfloop.TrainConfig(model=model, data=data, callbacks=callbacks, monitors=[],
                                extra_callbacks=[], max_epoch=max_epoch,
                                steps_per_epoch=steps_per_epoch)
    trainer = trainer or tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


X_VAL, LABEL_VAL = make_classification_data(10, seed=1)
X_TRAIN, LABEL_TRAIN = make_classification_data(24, seed=0)


def val_dataset():
    return tf.data.Dataset.from_tensor_slices((X_VAL, LABEL_VAL)).batch(4)


def test_seed_example_matches_numpy_on_the_same_weights():
    model, weights = Classifier(), []
    train_data = CountingBatches(batches(X_TRAIN, LABEL_TRAIN, 8))
    runner = InferenceRunner(val_dataset, [ClassificationError("wrong-top1", "val-error-top1"),
                                           ClassificationError("wrong-top5", "val-error-top5")])
    # fed in the training thread, so that the count shows what training took (no read-ahead)
    trainer = train(model, [runner, weight_recorder(weights)], tfloop.FeedInput(train_data),
                    max_epoch=3)

    expected = [numpy_errors(w, X_VAL, LABEL_VAL) for w in weights]
    assert trainer.monitors.get_history("val-error-top1") == [
        (3 * (i + 1), pytest.approx(e[1], abs=1e-12)) for i, e in enumerate(expected)]
    assert trainer.monitors.get_history("val-error-top5") == [
        (3 * (i + 1), pytest.approx(e[5], abs=1e-12)) for i, e in enumerate(expected)]
    # The weights change over the epochs, and the batches of 4, 4, 2 make a per-batch average
    # differ from the exact error: the test tells the two apart.
    assert len({e[1] for e in expected}) > 1
    naive = [numpy_errors(w, X_VAL, LABEL_VAL, batch_size=4) for w in weights]
    assert any(n[1] != e[1] for n, e in zip(naive, expected))

    # Training ran exactly its own steps on its own data; inference added no training fetches.
    assert trainer.global_step == 9 and train_data.served == 9
    assert runner not in trainer.run_callbacks
    # One training tower, one inference tower, sharing the two variables.
    assert model.modes == [True, False]
    assert [h.name for h in trainer.towers.inference()] == ["InferenceTower"]
    assert sorted(v.op.name for v in trainer.graph.get_collection(
        tfv1.GraphKeys.TRAINABLE_VARIABLES)) == ["W", "b"]
    # The tower's summary stays out of what training callbacks collect.
    summaries = trainer.graph.get_collection(tfv1.GraphKeys.SUMMARIES)
    assert [s.op.name for s in summaries] == ["cost-summary"]


class RecordingInferencer(Inferencer):
    def __init__(self, log):
        self.log = log

    def _get_fetches(self):
        return ["wrong-top1"]

    def _before_inference(self):
        self.log.append("before")

    def _before_batch(self):
        self.log.append("batch")

    def _on_fetches(self, results):
        self.log.append((len(results[0]), self.batch_size))

    def _after_inference(self):
        self.log.append("after")


def test_each_trigger_is_one_fresh_pass_over_a_dataset():
    log = []
    runner = PeriodicTrigger(InferenceRunner(val_dataset, RecordingInferencer(log)),
                             every_k_steps=2)
    trainer = train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=2)
    assert trainer.global_step == 6
    assert log == ["before", "batch", (4, 4), "batch", (4, 4), "batch", (2, 2), "after"] * 3


def test_iterable_input_and_feed_pass():
    log = []
    val = batches(X_VAL, LABEL_VAL, 3)
    runner = InferenceRunner(val, [RecordingInferencer(log), ClassificationError("wrong-top1")])
    weights = []
    trainer = train(Classifier(), [runner, weight_recorder(weights)],
                    batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=2)
    assert log == ["before", "batch", (3, 3), "batch", (3, 3), "batch", (3, 3), "batch", (1, 1),
                   "after"] * 2
    assert [v for _, v in trainer.monitors.get_history("validation_error")] == pytest.approx(
        [numpy_errors(w, X_VAL, LABEL_VAL)[1] for w in weights], abs=1e-12)


def test_queue_input_over_a_dataflow_is_one_pass_per_trigger():
    # tensorpack's ResNet example: InferenceRunner(QueueInput(dataset_val), infs)
    log = []
    val = tfloop.DataFromList(batches(X_VAL, LABEL_VAL, 3), shuffle=False)
    runner = InferenceRunner(tfloop.QueueInput(val), [RecordingInferencer(log)])
    train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=2)
    assert log == ["before", "batch", (3, 3), "batch", (3, 3), "batch", (3, 3), "batch", (1, 1),
                   "after"] * 2
    with pytest.raises(TypeError, match="an input with an end"):
        InferenceRunner(tfloop.BatchQueueInput(val, 2), [RecordingInferencer(log)])


def test_dataset_input_without_repeat_is_accepted():
    runner = InferenceRunner(DatasetInput(val_dataset, repeat=False),
                             [ClassificationError("wrong-top5", "e5")])
    trainer = train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)
    assert len(trainer.monitors.get_history("e5")) == 1


def test_scalar_stats_mean_is_exact_over_a_ragged_last_batch():
    x, y = make_regression_data(10, seed=5)
    weights = []
    runner = InferenceRunner(batches(x, y, 4), [ScalarStats("cost")])
    xt, yt = make_regression_data(12)
    trainer = train(LinearModel(), [runner, weight_recorder(weights)], batches(xt, yt, 4))
    squared_errors = [((x @ w["w"])[:, 0] - y) ** 2 for w in weights]
    got = [v for _, v in trainer.monitors.get_history("validation_cost")]
    assert got == pytest.approx([e.mean() for e in squared_errors], rel=1e-5)
    per_batch = [np.mean([e[i:i + 4].mean() for i in (0, 4, 8)]) for e in squared_errors]
    assert got != pytest.approx(per_batch, rel=1e-3)


def test_bad_tensor_name_fails_at_setup_with_close_matches():
    runner = InferenceRunner(val_dataset, [ClassificationError("wrong-top", "val-error")])
    with pytest.raises(UnknownNameError) as info:
        train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)
    message = str(info.value)
    assert "ClassificationError('wrong-top', 'val-error')" in message
    assert "'wrong-top'" in message and "InferenceTower" in message
    assert "wrong-top1" in message and "wrong-top5" in message


class TrainingOnly(Classifier):
    def build_graph(self, x, label):
        cost = super().build_graph(x, label)
        if get_current_tower_context().is_training:
            tf.reduce_sum(x, name="train-only")
        return cost


def test_tensor_of_the_training_tower_is_refused():
    runner = InferenceRunner(val_dataset, [ScalarStats("train-only")])
    with pytest.raises(ValueError, match="train-only.*not in the inference tower.*training input"):
        train(TrainingOnly(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)


class UnsharedVariable(Classifier):
    def build_graph(self, x, label):
        scale = tfv1.Variable(1.0, name="scale")
        return super().build_graph(x * scale, label)


def test_tower_creating_variables_is_refused():
    runner = InferenceRunner(val_dataset, [ClassificationError("wrong-top1")])
    with pytest.raises(ValueError, match=r"created new variables \['InferenceTower/scale"):
        train(UnsharedVariable(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)


def test_two_runners_need_distinct_tower_names():
    first = InferenceRunner(val_dataset, [ClassificationError("wrong-top1", "a")])
    second = InferenceRunner(val_dataset, [ClassificationError("wrong-top1", "b")])
    with pytest.raises(ValueError, match="already has a tower 'InferenceTower'"):
        train(Classifier(), [first, second], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)

    model = Classifier()
    first = InferenceRunner(val_dataset, [ClassificationError("wrong-top1", "a")])
    second = InferenceRunner(batches(X_VAL, LABEL_VAL, 5), [ClassificationError("wrong-top1", "b")],
                             tower_name="SecondTower")
    trainer = train(model, [first, second], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)
    assert model.modes == [True, False, False]
    assert trainer.monitors.get_latest("a") == trainer.monitors.get_latest("b")


def test_custom_tower_func():
    calls = []

    def tower(x, label):
        calls.append(get_current_tower_context().name)
        w = tfv1.get_variable("W", [N_FEATURES, N_CLASSES])
        logits = tf.matmul(x, w)
        in_top_1 = tf.nn.in_top_k(targets=label, predictions=logits, k=1)
        tf.cast(tf.logical_not(in_top_1), tf.float32, name="no-bias-wrong")

    runner = InferenceRunner(val_dataset, [ClassificationError("no-bias-wrong", "nb")],
                             tower_func=tower)
    trainer = train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)
    assert calls == ["InferenceTower"]
    assert 0.0 <= trainer.monitors.get_latest("nb") <= 1.0


def test_empty_pass_is_an_error():
    class Empty:
        def __iter__(self):
            return iter(())

    runner = InferenceRunner(Empty(), [ClassificationError("wrong-top1")])
    with pytest.raises(ValueError, match="gave no data in this pass"):
        train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)


def test_duplicate_stat_names_are_an_error():
    runner = InferenceRunner(val_dataset, [ClassificationError("wrong-top1", "err"),
                                           ClassificationError("wrong-top5", "err")])
    with pytest.raises(ValueError, match="two inferencers put a stat named 'err'"):
        train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)


def test_input_already_used_for_training_is_refused():
    data = tfloop.FeedInput(batches(X_TRAIN, LABEL_TRAIN, 8))
    runner = InferenceRunner(data, [ClassificationError("wrong-top1")])
    with pytest.raises(ValueError, match="needs an input source of its own"):
        train(Classifier(), [runner], data, max_epoch=1)


def test_infinite_dataset_is_refused_at_setup():
    runner = InferenceRunner(lambda: val_dataset().repeat(), [ClassificationError("wrong-top1")])
    with pytest.raises(ValueError, match="needs a finite dataset"):
        train(Classifier(), [runner], batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=1)


@pytest.mark.parametrize("data, error, match", [
    (lambda: None, None, None),
    (iter([(X_VAL, LABEL_VAL)]), TypeError, "one-shot iterator"),
    ((i for i in range(3)), TypeError, "one-shot iterator"),
    (DatasetInput(val_dataset), ValueError, "repeat=False"),
    (tfloop.DummyConstantInput(), TypeError, "an input with an end"),
    (42, TypeError, "got 42"),
])
def test_input_checked_at_construction(data, error, match):
    if error is None:
        assert isinstance(InferenceRunner(data, [ClassificationError()]), InferenceRunner)
        return
    with pytest.raises(error, match=match):
        InferenceRunner(data, [ClassificationError()])


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(infs=[]), ValueError, "at least one Inferencer"),
    (dict(infs=[object()]), TypeError, "needs Inferencer objects"),
    (dict(infs=ClassificationError(), tower_name="a/b"), ValueError, "tower_name"),
    (dict(infs=ClassificationError(), tower_func=3), TypeError, "tower_func"),
    (dict(infs=ClassificationError(), device=1.5), TypeError, "device"),
])
def test_arguments_checked_at_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        InferenceRunner(val_dataset, **kwargs)


class SignalAtBatch(RecordingInferencer):
    """Records as RecordingInferencer; sends SIGTERM to this process at its ``at``-th batch."""

    def __init__(self, log, at):
        super().__init__(log)
        self.at = at

    def _on_fetches(self, results):
        super()._on_fetches(results)
        if sum(isinstance(entry, tuple) for entry in self.log) == self.at:
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize("runner", [
    lambda infs: InferenceRunner(batches(X_VAL, LABEL_VAL, 1), infs),
    lambda infs: InferenceRunner(lambda: tf.data.Dataset.from_tensor_slices(
        (X_VAL, LABEL_VAL)).batch(1), infs),
    lambda infs: tfloop.DataParallelInferenceRunner(batches(X_VAL, LABEL_VAL, 1), infs, [0, 1]),
], ids=["feeds", "dataset", "data_parallel"])
def test_sigterm_during_a_pass_stops_it_between_batches_and_runs_no_further_step(runner,
                                                                                  caplog):
    log, steps = [], StepValues("cost")
    trainer = tfloop.SimpleTrainer()
    with caplog.at_level(logging.WARNING, logger="tfloop"), pytest.raises(SystemExit) as stop:
        train(Classifier(), [runner([SignalAtBatch(log, at=2)]), steps],
              batches(X_TRAIN, LABEL_TRAIN, 8), max_epoch=3, trainer=trainer)
    assert stop.value.code == 143
    # 10 validation batches; the pass ends after the second, and no inferencer finishes it.
    batches_seen = [entry for entry in log if isinstance(entry, tuple)]
    assert len(batches_seen) == 2 and "after" not in log
    assert trainer.global_step == 3 and len(steps.values) == 3
    assert "the pass was interrupted after" in caplog.text
    assert "because training is stopping (SIGTERM received); its statistics are left out." in \
        caplog.text
