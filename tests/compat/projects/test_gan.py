"""tensorpack's ``examples/GAN`` train on tfloop with their own ``GAN.py`` trainers (GANTrainer,
SeparateGANTrainer: TowerTrainer subclasses that build their graph in ``__init__``), imports
changed, a few steps on tiny synthetic images, and exit 0 with a checkpoint.

Only sizes shrink (steps, epochs, batch, channel counts, CycleGAN's residual blocks, image size
where the network allows):
each edit is listed in the case and must match the example exactly once.
"""
import gzip
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import run_example, write_example  # noqa: E402
from support import scaled_timeout  # noqa: E402

ONE_EPOCH_OF_TWO_STEPS = [("steps_per_epoch=300", "steps_per_epoch=2"),
                          ("max_epoch=200", "max_epoch=1")]


def write_jpegs(directory, count, shape, seed=0):
    """``count`` random JPEG images of ``shape`` (h, w, 3) in ``directory``."""
    import cv2
    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(seed)
    for i in range(count):
        image = (rng.rand(*shape) * 255).astype(np.uint8)
        cv2.imwrite(os.path.join(directory, f"{i}.jpg"), image)
    return directory


def write_mnist(directory, count=8, seed=0):
    """MNIST's four idx ``.gz`` files with ``count`` random 28x28 digits each."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.RandomState(seed)
    for prefix in ("train", "t10k"):
        images = rng.randint(0, 256, (count, 28, 28)).astype(np.uint8)
        labels = rng.randint(0, 10, count).astype(np.uint8)
        with gzip.open(os.path.join(directory, f"{prefix}-images-idx3-ubyte.gz"), "wb") as f:
            f.write(np.array([2051, count, 28, 28], ">u4").tobytes() + images.tobytes())
        with gzip.open(os.path.join(directory, f"{prefix}-labels-idx1-ubyte.gz"), "wb") as f:
            f.write(np.array([2049, count], ">u4").tobytes() + labels.tobytes())


def celeba_like(tmp_path):
    return ["--data", write_jpegs(str(tmp_path / "jpg"), 8, (24, 20, 3)), "--batch", "4"]


def image_pairs(tmp_path):
    # Image2Image reads images of shape (s, 2s, 3): input A on the left, output B on the right.
    return ["--data", write_jpegs(str(tmp_path / "pairs"), 1, (16, 32, 3))]


def horse2zebra_like(tmp_path):
    for name, count in (("trainA", 2), ("trainB", 2), ("testA", 32), ("testB", 32)):
        write_jpegs(str(tmp_path / "h2z" / name), count, (12, 12, 3), seed=len(name) + count)
    return ["--data", str(tmp_path / "h2z")]


def mnist(tmp_path):
    write_mnist(str(tmp_path / "datasets" / "mnist_data"))
    return []


CASES = {
    # script: (edits, arguments from the data it writes, log directory, checkpoint)
    "DCGAN.py": (ONE_EPOCH_OF_TWO_STEPS, celeba_like, "DCGAN", "model-2"),
    "Improved-WGAN.py": (ONE_EPOCH_OF_TWO_STEPS, celeba_like, "Improved-WGAN", "model-2"),
    "BEGAN.py": ([("steps_per_epoch=500, max_epoch=400", "steps_per_epoch=2, max_epoch=1"),
                  ("NH = 64", "NH = 16"), ("NF = 64", "NF = 16")],
                 celeba_like, "BEGAN", "model-2"),
    "InfoGAN-mnist.py": ([("steps_per_epoch=500", "steps_per_epoch=2"),
                          ("max_epoch=100", "max_epoch=1"), ("BATCH = 128", "BATCH = 8")],
                         mnist, "InfoGAN-mnist", "model-2"),
    # ModelSaver runs every 3 epochs: 3 epochs of one step (one image pair).
    "Image2Image.py": ([("max_epoch=300", "max_epoch=3"), ("NF = 64", "NF = 4")],
                       image_pairs, "Image2Image", "model-3"),
    "CycleGAN.py": ([("max_epoch=195", "max_epoch=1"), ("SHAPE = 256", "SHAPE = 32"),
                     ("NF = 64", "NF = 4"), ("for k in range(9):", "for k in range(2):")],
                    horse2zebra_like, "CycleGAN", "model-2"),
}


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(150))
@pytest.mark.parametrize("script", sorted(CASES))
def test_gan_example_trains_with_its_own_trainer(script, tmp_path):
    edits, make_data, log_name, checkpoint = CASES[script]
    src = write_example("examples/GAN", str(tmp_path / "GAN"), {script: edits})
    args = make_data(tmp_path)
    out = run_example(src, [script] + args, timeout=120,
                      env={"TENSORPACK_DATASET": str(tmp_path / "datasets")})
    log_dir = os.path.join(src, "train_log", log_name)
    assert os.path.isfile(os.path.join(log_dir, checkpoint + ".index")), out[-3000:]
    assert "Training has finished." in out
