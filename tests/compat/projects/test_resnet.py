"""tensorpack's ``ResNet/imagenet-resnet.py`` on tfloop, imports changed: ResNet-18 for two
steps of batch 2, on ``--fake`` data (NCHW) and on a tiny ILSVRC12 directory this test writes in
tensorpack's layout (NHWC), with validation."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_ilsvrc  # noqa: E402

pytest.importorskip("cv2")

SHRINK = {"imagenet-resnet.py": [
    ("steps_per_epoch=100 if args.fake else 1281167 // args.batch,", "steps_per_epoch=2,"),
    ("max_epoch=105,", "max_epoch=1,")]}
ARGS = ["imagenet-resnet.py", "-d", "18", "--batch", "2"]


@pytest.mark.slow
def test_imagenet_resnet_fake_data_nchw(tmp_path):
    code = write_example("examples/ResNet", tmp_path / "code", SHRINK)
    out = run_example(code, [*ARGS, "--fake", "--data-format", "NCHW"], 400)
    # --fake trains without callbacks (the example adds no ModelSaver there): no checkpoint
    assert "epoch 1 · step 2 · " in out and "Training has finished." in out
    assert os.path.isdir(code / "train_log" / "tmp")


@pytest.mark.slow
def test_imagenet_resnet_on_an_ilsvrc12_directory_nhwc(tmp_path):
    data = tmp_path / "data"
    write_ilsvrc(str(data / "imagenet"), str(data / "ilsvrc_metadata"), classes=3,
                 per_class=2, n_val=2, size=(60, 80))
    code = write_example("examples/ResNet", tmp_path / "code", SHRINK)
    run_example(code, [*ARGS, "--data", str(data / "imagenet"), "--data-format", "NHWC"], 400,
                {"TFLOOP_DATASET": str(data)})
    log_dir = code / "train_log" / "imagenet-resnet-d18-batch2"
    assert checkpoints(log_dir) == ["model-2.index"]
