"""Importing tfloop: one clear sentence without TensorFlow, and no change to global TF behaviour."""
import subprocess
import sys

import pytest
from support import scaled_timeout, train_linear

from tfloop.compat import tf

BLOCK_TENSORFLOW = """
import sys

class BlockTensorFlow:
    def find_spec(self, name, path, target=None):
        if name == "tensorflow" or name.startswith("tensorflow."):
            raise ImportError("No module named 'tensorflow'")
        return None

sys.meta_path.insert(0, BlockTensorFlow())
import tfloop                      # loads nothing yet: the tfloop command works without TF
from tfloop.cli import main
try:
    from tfloop import TrainConfig
except ImportError as e:
    print("MESSAGE:", e)
"""


def test_import_without_tensorflow_names_the_extra():
    out = subprocess.run([sys.executable, "-c", BLOCK_TENSORFLOW], capture_output=True, text=True,
                         timeout=scaled_timeout(20))
    assert ("MESSAGE: tfloop needs TensorFlow, which is not installed: run `pip install "
            "'tfloop-train[cpu]'` (or `pip install 'tfloop-train[gpu]'` for CUDA).\n"
            in out.stdout), out.stdout + out.stderr


def test_training_keeps_eager_execution_on():
    train_linear([], max_epoch=1)
    assert tf.executing_eagerly() and float(tf.reduce_sum(tf.ones(3))) == 3.0


@pytest.mark.slow
def test_import_keeps_eager_execution_on():
    code = ("import tensorflow as tf, tfloop; from support import train_linear;"
            "train_linear([], max_epoch=1); print('EAGER', tf.executing_eagerly(),"
            " float(tf.reduce_sum(tf.ones(3))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=scaled_timeout(40),
                         cwd=__file__.rsplit("/", 1)[0])
    assert "EAGER True 3.0" in out.stdout, out.stdout + out.stderr
