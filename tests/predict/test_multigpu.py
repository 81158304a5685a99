"""Multi-device predictors on 2 logical CPU devices give what one device gives."""
import threading

import numpy as np
import pytest
from support import make_regression_data

import tfloop
from tfloop.compat import tf, tfv1

N_IN, N_HIDDEN = 3, 5
RNG = np.random.RandomState(7)
WEIGHTS = {"fc1/W": RNG.randn(N_IN, N_HIDDEN).astype(np.float32),
           "fc1/b": RNG.randn(N_HIDDEN).astype(np.float32),
           "fc2/W": RNG.randn(N_HIDDEN, 2).astype(np.float32)}


class MLP(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, N_IN], tf.float32, "x")]

    def build_graph(self, x):
        w1 = tfv1.get_variable("fc1/W", [N_IN, N_HIDDEN])
        b1 = tfv1.get_variable("fc1/b", [N_HIDDEN])
        w2 = tfv1.get_variable("fc2/W", [N_HIDDEN, 2])
        out = tf.matmul(tf.tanh(tf.matmul(x, w1) + b1), w2, name="out")
        tf.nn.softmax(out, name="prob")


def config():
    return tfloop.PredictConfig(model=MLP(), session_init=WEIGHTS, output_names=["prob", "out"])


@pytest.fixture(scope="module")
def reference():
    return tfloop.OfflinePredictor(config())


def test_multi_tower_predictors_equal_one_device(reference):
    multi = tfloop.MultiTowerOfflinePredictor(config(), ["/cpu:0", "/cpu:1"])
    first, second = multi.get_predictors()
    assert len(multi.get_predictor(3)) == 3 and multi.get_predictor(3)[2] is first
    x, _ = make_regression_data(9)
    expected = reference(x)
    results = {}
    threads = [threading.Thread(target=lambda p=p, i=i: results.__setitem__(i, p(x)))
               for i, p in enumerate([first, second])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in (0, 1):
        for got, want in zip(results[i], expected):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    for got, want in zip(multi(x), expected):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    # Two towers, one set of variables, each tower's ops on its own device.
    assert sorted(v.op.name for v in multi.graph.get_collection(
        tfv1.GraphKeys.GLOBAL_VARIABLES)) == sorted(WEIGHTS)
    assert multi.graph.get_tensor_by_name("tower1/prob:0").device == "/device:CPU:1"
    assert len(multi.sess.list_devices()) >= 2


def test_data_parallel_predictor_runs_one_batch_per_tower(reference):
    predictor = tfloop.DataParallelOfflinePredictor(config(), [0, 1])   # no GPU: CPU:0, CPU:1
    xa, _ = make_regression_data(4, seed=1)
    xb, _ = make_regression_data(7, seed=2)
    prob_a, out_a, prob_b, out_b = predictor(xa, xb)
    for got, want in zip([prob_a, out_a, prob_b, out_b], reference(xa) + reference(xb)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("towers, error, match", [
    ([], ValueError, "towers is empty"), (2, TypeError, "list of GPU indices"),
    (["/cpu:0", "/cpu:0"], ValueError, "name a device twice"), ([-1], ValueError, "not a GPU"),
])
def test_bad_towers(towers, error, match):
    with pytest.raises(error, match=match):
        tfloop.DataParallelOfflinePredictor(config(), towers)
