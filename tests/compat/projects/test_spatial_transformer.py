"""tensorpack's ``SpatialTransformer/mnist-addition.py`` on tfloop, imports changed: two steps
on tiny MNIST files this test writes. The example passes an undefined name to ``MapData``
(``dp`` for its ``mapper``): the one-line fix docs/migrating.md lists."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_mnist  # noqa: E402

pytest.importorskip("cv2")


@pytest.mark.slow
def test_mnist_addition_trains(tmp_path):
    write_mnist(str(tmp_path / "data" / "mnist_data"), n_train=256, n_test=128)
    code = write_example("examples/SpatialTransformer", tmp_path / "code", {
        "mnist-addition.py": [
            ("    ds = MapData(ds, dp)", "    ds = MapData(ds, mapper)"),  # the example's bug
            ("steps_per_epoch = len(dataset_train) * 5", "steps_per_epoch = 2"),
            ("max_epoch=500,", "max_epoch=1,")]})
    run_example(code, ["mnist-addition.py"], 300, {"TFLOOP_DATASET": str(tmp_path / "data")})
    assert checkpoints(code / "train_log" / "mnist-addition") == ["model-2.index"]
