"""MultiProcessDatasetPredictor: worker processes, outputs in the order of the data."""
import numpy as np
import pytest
from support import LinearModel, make_regression_data

import tfloop

W = np.array([[1.0], [0.5], [-2.0]], np.float32)
X, Y = make_regression_data(22, seed=8)


def config(**kwargs):
    return tfloop.PredictConfig(model=LinearModel(), session_init={"w": W}, input_names=["x"],
                                output_names=["pred"], **kwargs)


@pytest.mark.slow
def test_two_workers_give_the_batches_in_order_over_two_passes():
    batches = [X[i:i + 3] for i in range(0, 22, 3)]       # 8 batches: groups of 4, last of 3
    speed = tfloop.PredictThroughput()
    predictor = tfloop.MultiProcessDatasetPredictor(config(), batches, nr_proc=2, use_gpu=False,
                                                    callbacks=[speed])
    try:
        for _ in range(2):
            results = predictor.get_all_result()
            assert len(results) == 8 and speed.samples == 22
            np.testing.assert_allclose(np.concatenate([r[0] for r in results]), (X @ W)[:, 0],
                                       rtol=1e-6)
        with pytest.raises(RuntimeError, match="ValueError: .*input 'x:0' expects float32"):
            tfloop.MultiProcessDatasetPredictor(config(), [np.zeros([2, 4])], 1,
                                                use_gpu=False).get_all_result()
    finally:
        predictor.close()


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="nr_proc must be a positive int"):
        tfloop.MultiProcessDatasetPredictor(config(), [X], 0)
    used = config()
    tfloop.OfflinePredictor(used)
    with pytest.raises(TypeError, match="pickled, which failed"):
        tfloop.MultiProcessDatasetPredictor(used, [X], 1)
