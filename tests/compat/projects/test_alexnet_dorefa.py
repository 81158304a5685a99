"""tensorpack's ``DoReFa-Net/alexnet-dorefa.py`` on tfloop, imports changed: AlexNet with 1-bit
weights, 2-bit activations and 4-bit gradients (NCHW), two steps of batch 2 on a tiny ILSVRC12
directory this test writes, then validation."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_ilsvrc  # noqa: E402

pytest.importorskip("cv2")


@pytest.mark.slow
def test_alexnet_dorefa_trains_on_an_ilsvrc12_directory(tmp_path):
    data = tmp_path / "data"
    write_ilsvrc(str(data / "imagenet"), str(data / "ilsvrc_metadata"), classes=2,
                 per_class=2, n_val=2, size=(60, 80))
    code = write_example("examples/DoReFa-Net", tmp_path / "code", {"alexnet-dorefa.py": [
        ("TOTAL_BATCH_SIZE = 256", "TOTAL_BATCH_SIZE = 2"),
        ("steps_per_epoch=1280000 // TOTAL_BATCH_SIZE,", "steps_per_epoch=2,"),
        ("max_epoch=90,", "max_epoch=1,")]})
    run_example(code, ["alexnet-dorefa.py", "--dorefa", "1,2,4", "--data", str(data / "imagenet")],
                500, {"TFLOOP_DATASET": str(data)})
    assert checkpoints(code / "train_log" / "alexnet-dorefa-1,2,4") == ["model-2.index"]
