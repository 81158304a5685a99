"""tensorpack's ``examples/basics`` MNIST and CIFAR scripts on tfloop, imports changed: one epoch
of one step (the steps shrunk) on tiny MNIST / CIFAR-10 files this test writes.
(``svhn-digit-convnet.py`` is in test_svhn.py.) ``mnist-tflayers.py`` calls ``tf.layers``, which
TensorFlow 2.21 provides only with Keras 2: it runs with ``tf-keras`` installed and
``TF_USE_LEGACY_KERAS=1`` (docs/migrating.md, "Projects that call tf.layers")."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_cifar, write_mnist  # noqa: E402

MNIST_SCRIPTS = {
    "mnist-convnet": [("max_epoch=100,", "max_epoch=1,")],
    "mnist-visualizations": [("max_epoch=100,", "max_epoch=1,")],
    "mnist-tflayers": [("max_epoch=100,", "max_epoch=1,")],
}
# tf.layers exists with Keras 2 only: tf-keras installed, and TensorFlow told to use it.
LEGACY_KERAS = {"mnist-tflayers": {"TF_USE_LEGACY_KERAS": "1"}}


def skip_without_matching_tf_keras():
    """tf.layers needs Keras 2 of TensorFlow's own version (.ci/run installs the newest)."""
    tf_keras = pytest.importorskip("tf_keras", reason="tf.layers needs Keras 2: pip install "
                                                      "tf-keras")
    from tfloop.compat import tf
    if tf_keras.__version__.split(".")[:2] != tf.__version__.split(".")[:2]:
        pytest.skip(f"tf-keras {tf_keras.__version__} does not match TensorFlow "
                    f"{tf.__version__}: pip install 'tf-keras=={tf.__version__}'")


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(MNIST_SCRIPTS))
def test_mnist_scripts_train_one_epoch(tmp_path, script):
    if script in LEGACY_KERAS:
        skip_without_matching_tf_keras()
    write_mnist(str(tmp_path / "data" / "mnist_data"), n_train=128, n_test=64)
    code = write_example("examples/basics", tmp_path / "code",
                         {f"{script}.py": MNIST_SCRIPTS[script]})
    run_example(code, [f"{script}.py"], 300, {"TFLOOP_DATASET": str(tmp_path / "data"),
                                              **LEGACY_KERAS.get(script, {})})
    assert checkpoints(code / "train_log" / script) == ["model-1.index"]


@pytest.mark.slow
def test_cifar_convnet_trains_one_epoch(tmp_path):
    write_cifar(str(tmp_path / "data" / "cifar10_data"), per_batch=26, n_test=20)
    code = write_example("examples/basics", tmp_path / "code",
                         {"cifar-convnet.py": [("max_epoch=150,", "max_epoch=1,")]})
    run_example(code, ["cifar-convnet.py"], 300, {"TFLOOP_DATASET": str(tmp_path / "data")})
    assert checkpoints(code / "train_log" / "cifar10") == ["model-1.index"]
