"""TensorPrinter logs the fetched values of every step, from the step's own session.run."""
import numpy as np
import pytest
from support import FINAL_WEIGHTS_READ, RunCounter, train_linear

from tfloop import ProcessTensors, TensorPrinter


def test_prints_each_step_value(log_lines):
    costs, counter = [], RunCounter()
    train_linear([ProcessTensors(["cost"], costs.append), TensorPrinter(["cost"]), counter],
                 max_epoch=1)
    printed = [line for line in log_lines if line.startswith("cost: ")]
    assert printed == [f"cost: {np.float32(c)}" for c in costs]
    assert len(printed) == 3
    assert counter.runs == 3 + FINAL_WEIGHTS_READ


def test_bad_names_are_refused():
    with pytest.raises(ValueError, match="TensorPrinter needs a list of tensor names"):
        TensorPrinter([])
