"""MultiThreadAsyncPredictor: single examples batched by worker threads, answered by futures."""
import threading

import numpy as np
import pytest
from support import make_regression_data, scaled_timeout

import tfloop
from tfloop.compat import tf, tfv1

W = np.array([[1.0], [-1.0], [0.5]], np.float32)


class Linear(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x")]

    def build_graph(self, x):
        w = tfv1.get_variable("w", [3, 1])
        tf.squeeze(tf.matmul(x, w), 1, name="pred")


class CountingPredictor(tfloop.PredictorBase):
    """Wraps a predictor; records the batch size of every call."""

    def __init__(self, inner, sizes):
        self.inner, self.sizes = inner, sizes

    def _do_call(self, dp):
        self.sizes.append(len(dp[0]))
        return self.inner._do_call(dp)


def test_examples_are_batched_and_each_future_gets_its_row():
    inner = tfloop.OfflinePredictor(tfloop.PredictConfig(model=Linear(), session_init={"w": W},
                                                         output_names=["pred"]))
    sizes = []
    async_pred = tfloop.MultiThreadAsyncPredictor([CountingPredictor(inner, sizes)] * 2,
                                                  batch_size=4)
    with pytest.raises(RuntimeError, match="call start"):
        async_pred.put_task([np.zeros(3, np.float32)])
    async_pred.start()
    x, _ = make_regression_data(23)
    seen, done = [], threading.Event()

    def callback(outputs):
        seen.append(float(outputs[0]))
        if len(seen) == len(x):
            done.set()
    futures = [async_pred.put_task([row], callback) for row in x]
    got = np.array([f.result(timeout=scaled_timeout(10))[0] for f in futures])
    np.testing.assert_allclose(got, (x @ W)[:, 0], rtol=1e-6)
    assert done.wait(scaled_timeout(10)) and sorted(seen) == pytest.approx(sorted(got))
    assert sum(sizes) == len(x) and max(sizes) <= 4
    np.testing.assert_allclose(async_pred(x[0])[0], (x[:1] @ W)[0, 0], rtol=1e-6)
    async_pred.stop()


def test_a_failing_batch_sets_the_error_on_its_futures_and_workers_go_on(log_warnings):
    inner = tfloop.OfflinePredictor(tfloop.PredictConfig(model=Linear(), session_init={"w": W},
                                                         output_names=["pred"]))
    async_pred = tfloop.MultiThreadAsyncPredictor([inner], batch_size=1)
    async_pred.start()
    bad = async_pred.put_task([np.zeros(4, np.float32)])
    with pytest.raises(ValueError, match="expects float32"):
        bad.result(timeout=scaled_timeout(10))
    good = async_pred.put_task([np.ones(3, np.float32)])
    assert good.result(timeout=scaled_timeout(10))[0] == pytest.approx(0.5)
    async_pred.stop()
    assert any("a batch of 1 failed" in m for m in log_warnings)


def test_arguments_are_checked():
    with pytest.raises(TypeError, match="non-empty list of predictors"):
        tfloop.MultiThreadAsyncPredictor([])
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        tfloop.MultiThreadAsyncPredictor([tfloop.PredictorBase()], batch_size=0)
