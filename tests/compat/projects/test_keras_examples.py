"""tensorpack's ``examples/keras`` scripts on tfloop, imports changed: one epoch of one step on
tiny MNIST files this test writes. ``mnist-keras-v2.py`` trains through
``tfloop.contrib.keras.KerasModel``; ``mnist-keras.py`` calls a Keras model in ``build_graph``
with ``KerasPhaseCallback`` and needs the one-line change docs/migrating.md documents: Keras 3
models have no ``updates`` (tfloop puts Keras layers' updates in ``UPDATE_OPS`` itself)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_mnist  # noqa: E402

SCRIPTS = {
    "mnist-keras-v2": ("validation_categorical_accuracy", [
        ("steps_per_epoch=len(dataset_train),",
         "steps_per_epoch=len(dataset_train), max_epoch=1,")]),
    "mnist-keras": ("validation_accuracy", [
        ("max_epoch=100,", "max_epoch=1,"),
        # the example's Keras 2 bug (docs/migrating.md): Keras 3 models have no `updates`
        ("for op in M.updates:", "for op in []:")]),
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_keras_example_trains_one_epoch(tmp_path, script):
    # 128 training images: one batch of 128; 256 test images: one full batch of 256
    write_mnist(str(tmp_path / "data" / "mnist_data"), n_train=128, n_test=256)
    validation_stat, edits = SCRIPTS[script]
    code = write_example("examples/keras", tmp_path / "code", {f"{script}.py": edits})
    out = run_example(code, [f"{script}.py"], 300, {"TFLOOP_DATASET": str(tmp_path / "data")})
    assert checkpoints(code / "train_log" / script) == ["model-1.index"]
    assert f" {validation_stat} " in out, out[-3000:]  # the InferenceRunner ran on the test set
