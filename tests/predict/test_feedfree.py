"""FeedfreePredictor: batches from an in-graph input source, nothing fed."""
import numpy as np
import pytest
from support import PredictLinearModel, make_regression_data

import tfloop
from tfloop.compat import tf

W = np.array([[2.0], [0.0], [-1.0]], np.float32)
X, Y = make_regression_data(10, seed=6)


def config():
    return tfloop.PredictConfig(model=PredictLinearModel(), session_init={"w": W},
                                output_names=["pred", "err"], return_input=False)


def test_each_call_predicts_the_next_batch_until_the_end():
    source = tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((X, Y)).batch(4),
                                 repeat=False)
    predictor = tfloop.FeedfreePredictor(config(), source)
    for start in (0, 4, 8):
        pred, err = predictor()
        np.testing.assert_allclose(pred, (X[start:start + 4] @ W)[:, 0], rtol=1e-6)
        np.testing.assert_allclose(err, pred - Y[start:start + 4], rtol=1e-6)
    with pytest.raises(tf.errors.OutOfRangeError):
        predictor()


def test_bad_input_sources():
    with pytest.raises(TypeError, match="in-graph input"):
        tfloop.FeedfreePredictor(config(), tfloop.FeedInput([(X, Y)]))
    source = tfloop.DummyConstantInput([[2, 3], [2]])
    tfloop.FeedfreePredictor(config(), source)
    with pytest.raises(ValueError, match="input source of its own"):
        tfloop.FeedfreePredictor(config(), source)
