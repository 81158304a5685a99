"""ready_components: the loader thread's quick check of a well-formed datapoint, and the full
check (datapoint_components) for everything else."""
import numpy as np
import pytest

from tfloop.compat import tf
from tfloop.input.loader import component_plan, datapoint_components, ready_components

SPECS = [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "y"),
         tf.TensorSpec(None, tf.float32, "any")]
PLAN = component_plan(SPECS)


def good():
    return (np.zeros((2, 3), np.float32), np.array([1, 2], np.int32), np.ones(4, np.float32))


def test_a_well_formed_datapoint_is_taken_as_it_is():
    dp = good()
    ready = ready_components(dp, PLAN)
    assert all(a is b for a, b in zip(ready, dp))
    assert all(a is b for a, b in zip(ready, datapoint_components(dp, SPECS, "Q datapoint 0")))


@pytest.mark.parametrize("change, message", [
    (lambda dp: (dp[0].astype(np.float64), dp[1], dp[2]), None),           # a safe cast
    (lambda dp: (dp[0].tolist(), dp[1], dp[2]), None),                      # not an array
    (lambda dp: (dp[0][:, :2], dp[1], dp[2]), r"got shape \(2, 2\) for input x"),
    (lambda dp: (dp[0], dp[1][:1], dp[2]), r"different batch sizes \(x: 2, y: 1\)"),
    (lambda dp: (dp[0], dp[1].astype(np.float32) + 0.5, dp[2]), r"takes floats only when"),
    (lambda dp: dp[:2], r"must be a list of 3 components"),
    (lambda dp: dict(zip("xy", dp[:2]), any=dp[2]), None),                  # a dict
])
def test_anything_else_goes_to_the_full_check(change, message):
    dp = change(good())
    assert ready_components(dp, PLAN) is None
    if message is None:
        datapoint_components(dp, SPECS, "Q datapoint 0")
    else:
        with pytest.raises(ValueError, match=message):
            datapoint_components(dp, SPECS, "Q datapoint 0")
