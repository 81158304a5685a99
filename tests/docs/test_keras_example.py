"""examples/keras_mnist.py runs for a few steps, saves checkpoints and a Keras model file."""
import os
import re

import pytest
from forked_python import run_python
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "keras_mnist.py")


@pytest.mark.slow
def test_keras_example_trains_a_few_steps_and_saves_a_keras_model(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TF_CPP_MIN_LOG_LEVEL="2")
    out = run_python([EXAMPLE, "--max-epoch", "2", "--steps-per-epoch", "3", "--logdir", "log"],
                     tmp_path, env, scaled_timeout(90))
    output = out.stdout + out.stderr
    assert out.returncode == 0, output[-4000:]
    logdir = tmp_path / "log"
    assert (logdir / "model-6.index").exists() and (logdir / "model.keras").exists()
    # a setter's change is a detail: log.log has it, the quiet console does not
    assert "learning_rate = 0.0003 at global step 3" in (logdir / "log.log").read_text()
    during = re.search(r"Validation accuracy during training: ([0-9.]+)%", output).group(1)
    reloaded = re.search(r"reloaded by Keras, its validation accuracy is ([0-9.]+)%", output)
    assert reloaded.group(1) == during
