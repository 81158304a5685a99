"""tensorpack's ``basics/svhn-digit-convnet.py`` and ``DoReFa-Net/svhn-digit-dorefa.py`` on
tfloop, imports changed, on tiny SVHN ``.mat`` files this test writes; one epoch."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import checkpoints, run_example, write_example  # noqa: E402
from dataflow_support import write_svhn  # noqa: E402

pytest.importorskip("scipy")

SIZES = (("train", 100), ("extra", 40), ("test", 20))


@pytest.fixture
def svhn_env(tmp_path):
    write_svhn(str(tmp_path / "data" / "svhn_data"), sizes=SIZES)
    return {"TFLOOP_DATASET": str(tmp_path / "data")}


@pytest.mark.slow
def test_svhn_digit_convnet(tmp_path, svhn_env):
    code = write_example("examples/basics", tmp_path / "code",
                         {"svhn-digit-convnet.py": [("max_epoch=350", "max_epoch=1")]})
    run_example(code, ["svhn-digit-convnet.py"], 300, svhn_env)
    log_dir = code / "train_log" / "svhn-digit-convnet"
    assert checkpoints(log_dir) == ["model-1.index"]


@pytest.mark.slow
def test_svhn_digit_dorefa(tmp_path, svhn_env):
    code = write_example("examples/DoReFa-Net", tmp_path / "code",
                         {"svhn-digit-dorefa.py": [("max_epoch=200", "max_epoch=1")]})
    run_example(code, ["svhn-digit-dorefa.py", "--dorefa", "1,2,4"], 300, svhn_env)
    log_dir = code / "train_log" / "svhn-dorefa-1,2,4"
    assert checkpoints(log_dir) == ["model-1.index"]
