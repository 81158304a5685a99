"""trainer.get_predictor and the inference runners: one predict-tower path, shared variables."""
import numpy as np
import pytest
from support import LinearModel, batches, make_regression_data

import tfloop
from tfloop import DataParallelInferenceRunner, Inferencer, InferenceRunner, ScalarStats
from tfloop.compat import tf, tfv1

X_VAL, Y_VAL = make_regression_data(10, seed=4)


class PredictEachEpoch(tfloop.Callback):
    """Predicts X_VAL from another thread-free call at every epoch end, beside the weights."""

    def __init__(self, log, device=0):
        self.log, self.device = log, device

    def _setup_graph(self):
        self.pred = self.trainer.get_predictor(["x"], ["pred", "w"], device=self.device)
        self.again = self.trainer.get_predictor(["x"], ["pred"], device=self.device)

    def _trigger_epoch(self):
        pred, w = self.pred(X_VAL)
        self.log.append((pred, w, self.again(X_VAL)[0]))


def train(callbacks, data=None, max_epoch=2, session_config=None):
    x, y = make_regression_data(12)
    config = tfloop.TrainConfig(model=LinearModel(), data=data or batches(x, y, 4),
                                callbacks=callbacks, monitors=[], extra_callbacks=[],
                                max_epoch=max_epoch, session_config=session_config)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


def test_get_predictor_runs_on_the_current_weights_without_a_copy():
    log = []
    trainer = train([PredictEachEpoch(log)])
    assert len(log) == 2
    for pred, w, again in log:
        np.testing.assert_allclose(pred, (X_VAL @ w)[:, 0], rtol=1e-6)
        np.testing.assert_array_equal(again, pred)
    assert not np.allclose(log[0][1], log[1][1])
    # One predict tower (the second call reused it), sharing the one variable.
    assert [h.name for h in trainer.towers.inference()] == ["tower-pred-0"]
    variables = [v.op.name for v in trainer.graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)]
    assert "w" in variables and not [v for v in variables if v.startswith("tower-pred")]


def test_get_predictor_on_the_cpu_and_its_errors():
    log = []
    trainer = train([PredictEachEpoch(log, device=-1)], max_epoch=1)
    assert [h.name for h in trainer.towers.inference()] == ["tower-pred-cpu"]

    class Early(tfloop.Callback):
        def _setup_graph(self):
            self.pred = self.trainer.get_predictor(["x"], ["pred"])
            with pytest.raises(RuntimeError, match="does not exist yet"):
                self.pred(X_VAL)
            with pytest.raises(KeyError, match="no tensor named 'prd'.*Close matches: pred"):
                self.trainer.get_predictor(["x"], ["prd"])

        def _after_train(self):
            with pytest.raises(RuntimeError, match="before the graph is finalized"):
                self.trainer.get_predictor(["x"], ["pred"], device=3)
    train([Early()], max_epoch=1)


class Collect(Inferencer):
    """Every batch's predictions and batch sizes, in the order the runner hands them over."""

    def __init__(self, log):
        self.log = log

    def _get_fetches(self):
        return ["pred"]

    def _before_inference(self):
        self.log.append("before")

    def _on_fetches(self, results):
        self.log.append((results[0].round(5).tolist(), self.batch_size))

    def _after_inference(self):
        self.log.append("after")


def two_cpus():
    config = tfloop.default_session_config()
    config.device_count["CPU"] = 2
    return config


def val_dataset():
    return tf.data.Dataset.from_tensor_slices((X_VAL, Y_VAL)).batch(3)


@pytest.mark.parametrize("data", [val_dataset, batches(X_VAL, Y_VAL, 3), val_dataset(),
                                  lambda: val_dataset().filter(lambda x, y: True)],
                         ids=["function", "list", "eager dataset", "unknown length"])
def test_data_parallel_inference_equals_one_tower(data):
    single, parallel = [], []
    trainer = train([
        InferenceRunner(data, [Collect(single), ScalarStats("cost", prefix="one")]),
        DataParallelInferenceRunner(data, [Collect(parallel), ScalarStats("cost", prefix="dp")],
                                    gpus=["/cpu:0", "/cpu:1"], tower_name="DP")],
        session_config=two_cpus())
    # 10 samples in batches of 3: 4 batches, the last round of the 2 towers is full; every batch
    # reaches the inferencer once, in order, so the stats are the same.
    assert parallel == single
    assert [e[1] for e in single if isinstance(e, tuple)] == [3, 3, 3, 1] * 2
    one, dp = (trainer.monitors.get_history(f"{p}_cost") for p in ("one", "dp"))
    assert [v for _, v in dp] == pytest.approx([v for _, v in one], rel=1e-6)
    assert [h.name for h in trainer.towers.inference()] == ["InferenceTower", "DP0", "DP1"]
    devices = {op.device for op in trainer.graph.get_operations() if op.name.startswith("DP1/")}
    assert "/device:CPU:1" in devices


def test_data_parallel_inference_with_more_towers_than_a_round_needs():
    log = []
    data = batches(X_VAL, Y_VAL, 4)   # 3 batches over 2 towers: rounds of 2 and 1
    train([DataParallelInferenceRunner(data, [Collect(log)], gpus=["/cpu:0", "/cpu:1"])],
          max_epoch=1, session_config=two_cpus())
    assert [e[1] for e in log if isinstance(e, tuple)] == [4, 4, 2]


@pytest.mark.parametrize("gpus, error, match", [
    (0, ValueError, ">= 1"), ([], ValueError, "empty"), ("0", TypeError, "list of GPU"),
    ([1.5], TypeError, "items must be"),
])
def test_data_parallel_runner_checks_gpus(gpus, error, match):
    with pytest.raises(error, match=match):
        DataParallelInferenceRunner(val_dataset, [ScalarStats("cost")], gpus=gpus)
