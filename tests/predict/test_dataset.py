"""Dataset predictors over eager tf.data, functions and iterables, with prediction callbacks."""
import numpy as np
import pytest
from support import PredictLinearModel, make_regression_data

import tfloop
from tfloop import (
    CollectOutputs,
    PredictCallback,
    PredictThroughput,
    SimpleDatasetPredictor,
    StopPrediction,
    StopPredictionAfter,
)
from tfloop.compat import tf

W = np.array([[1.0], [2.0], [-1.0]], np.float32)
X, Y = make_regression_data(10, seed=3)


def config(**kwargs):
    kwargs.setdefault("output_names", ["pred"])
    kwargs.setdefault("input_names", ["x"])
    return tfloop.PredictConfig(model=PredictLinearModel(), session_init={"w": W}, **kwargs)


class Recorder(PredictCallback):
    """Records every hook call with the batch index and what it saw."""

    def __init__(self, log, stop_at=None):
        self.log, self.stop_at = log, stop_at

    def _before_predict(self):
        self.log.append(("before_predict",))

    def _before_batch(self, inputs):
        self.log.append(("before_batch", self.batch_index, inputs[0].shape[0]))

    def _after_batch(self, inputs, outputs):
        self.log.append(("after_batch", self.batch_index, outputs[0].round(4).tolist()))
        if self.batch_index == self.stop_at:
            raise StopPrediction("enough")

    def _after_predict(self):
        self.log.append(("after_predict",))


def expected_batches(size):
    return [(X[i:i + size] @ W)[:, 0] for i in range(0, len(X), size)]


DATASETS = {
    "eager dataset": lambda: tf.data.Dataset.from_tensor_slices(X).batch(4),
    "function": lambda: (lambda: tf.data.Dataset.from_tensor_slices(X).batch(4)),
    "list of arrays": lambda: [X[i:i + 4] for i in range(0, 10, 4)],
    "list of dicts": lambda: [{"x": X[i:i + 4]} for i in range(0, 10, 4)],
    "generator function": lambda: type("Gen", (), {"__iter__": lambda self: (
        (X[i:i + 4],) for i in range(0, 10, 4))})(),
}


@pytest.mark.parametrize("kind", sorted(DATASETS))
def test_simple_dataset_predictor_yields_each_batch_and_calls_hooks_in_order(kind):
    log = []
    predictor = SimpleDatasetPredictor(config(), DATASETS[kind](), callbacks=[Recorder(log)])
    results = predictor.get_all_result()
    want = expected_batches(4)
    assert len(results) == 3
    for (got,), exp in zip(results, want):
        np.testing.assert_allclose(got, exp, rtol=1e-6)
    assert log == [("before_predict",)] + [
        entry for i, exp in enumerate(want) for entry in (
            ("before_batch", i, len(exp)), ("after_batch", i, exp.round(4).tolist()))] + [
        ("after_predict",)]
    assert predictor.get_all_result()[2][0].shape == (2,)   # a second pass gives the data again


def test_stop_early_and_collect_and_throughput(log_lines):
    log, collect, speed = [], CollectOutputs(), PredictThroughput()
    predictor = SimpleDatasetPredictor(config(), [X[i:i + 2] for i in range(0, 10, 2)],
                                       callbacks=[Recorder(log, stop_at=1), collect, speed])
    results = list(predictor.get_result())
    assert len(results) == 2
    assert [e[0] for e in log] == ["before_predict", "before_batch", "after_batch",
                                   "before_batch", "after_batch", "after_predict"]
    np.testing.assert_allclose(collect.concatenated()[0], (X[:4] @ W)[:, 0], rtol=1e-6)
    assert (speed.batches, speed.samples) == (2, 4) and speed.samples_per_second > 0
    assert any("prediction stopped: enough" in m for m in log_lines)
    assert any("4 samples in 2 batches" in m for m in log_lines)

    stop = SimpleDatasetPredictor(config(), [X[i:i + 3] for i in range(0, 9, 3)],
                                  callbacks=[StopPredictionAfter(samples=4)])
    assert len(stop.get_all_result()) == 2


def test_after_predict_runs_when_a_batch_fails_or_the_consumer_stops():
    log = []
    bad = [X[:2], np.zeros([2, 4], np.float32)]
    with pytest.raises(ValueError, match="input 'x:0' expects float32"):
        SimpleDatasetPredictor(config(), bad, callbacks=[Recorder(log)]).get_all_result()
    assert log[-1] == ("after_predict",)
    log.clear()
    gen = SimpleDatasetPredictor(config(), [X[:2], X[2:4]], callbacks=[Recorder(log)]).get_result()
    next(gen)
    gen.close()
    assert log[-1] == ("after_predict",)


def test_multi_tower_dataset_predictor_keeps_the_data_order():
    config_two = config(output_names=["pred", "err"], input_names=["x", "y"])
    data = [(X[i:i + 3], Y[i:i + 3]) for i in range(0, 10, 3)]   # 4 batches, 2 towers... and 3
    single = SimpleDatasetPredictor(config_two, data).get_all_result()
    for towers in (["/cpu:0", "/cpu:1"], [0, 1, 2]):
        log = []
        multi = tfloop.MultiTowerDatasetPredictor(config_two, data, towers,
                                                  callbacks=[Recorder(log)])
        results = multi.get_all_result()
        assert len(results) == 4
        for got, want in zip(results, single):
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-6)
        assert [e[1] for e in log if e[0] == "after_batch"] == [0, 1, 2, 3]


@pytest.mark.parametrize("data, error, match", [
    (42, TypeError, "an iterable of batches"),
    (lambda: tf.data.Dataset.range(3).repeat(), ValueError, "repeats forever"),
    ([(X, Y)], ValueError, r"batch 0 has 2 component\(s\) but the predictor takes 1"),
    ([{"y": Y}], ValueError, r"missing the inputs \['x'\]"),
])
def test_bad_data_is_a_clear_error(data, error, match):
    with pytest.raises(error, match=match):
        SimpleDatasetPredictor(config(), data).get_all_result()


def test_graph_dataset_is_refused():
    with tf.Graph().as_default():
        ds = tf.data.Dataset.from_tensor_slices(X)
    with pytest.raises(ValueError, match="built inside a graph"):
        SimpleDatasetPredictor(config(), ds).get_all_result()


def test_callbacks_and_arguments_are_checked():
    with pytest.raises(TypeError, match="PredictCallback objects"):
        SimpleDatasetPredictor(config(), [X], callbacks=[tfloop.ModelSaver()])
    with pytest.raises(ValueError, match="needs batches= or samples="):
        StopPredictionAfter()
    with pytest.raises(ValueError, match="batches must be a positive int"):
        StopPredictionAfter(batches=0)
    with pytest.raises(ValueError, match="no batch"):
        _empty_collect()


def _empty_collect():
    collect = CollectOutputs()
    SimpleDatasetPredictor(config(), [], callbacks=[collect]).get_all_result()
    return collect.concatenated()


def test_return_input_yields_inputs_with_outputs():
    batches = [X[:4], X[4:]]
    for predictor in (SimpleDatasetPredictor(config(return_input=True), batches),
                      tfloop.MultiTowerDatasetPredictor(config(return_input=True), batches,
                                                        ["/cpu:0", "/cpu:1"])):
        results = predictor.get_all_result()
        for (inputs, (pred,)), x in zip(results, batches):
            np.testing.assert_array_equal(inputs[0], x)
            np.testing.assert_allclose(pred, (x @ W)[:, 0], rtol=1e-6)
