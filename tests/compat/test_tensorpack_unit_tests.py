"""tensorpack 0.11's own unit test for the hyper-parameter schedule, run against tfloop with
only its imports changed (the file is read from the installed tensorpack, not copied here)."""
import os
import re
import subprocess
import sys

import pytest
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# tensorpack import -> tfloop import, line by line.
IMPORTS = [
    (r"^import tensorflow as tf$", "import unittest.mock\nfrom tfloop import tfv1 as tf"),
    (r"^from \.\.utils import logger$", "from tfloop.utils import logger"),
    (r"^from \.\.train\.trainers import NoOpTrainer$", "from tfloop import NoOpTrainer"),
    (r"^from \.param import ", "from tfloop import "),
]


@pytest.mark.slow
def test_tensorpack_param_test_passes_with_imports_changed(tmp_path):
    tensorpack = pytest.importorskip("tensorpack")
    source_path = os.path.join(os.path.dirname(tensorpack.__file__), "callbacks", "param_test.py")
    with open(source_path, encoding="utf-8") as f:
        source = f.read()
    for pattern, replacement in IMPORTS:
        source, count = re.subn(pattern, replacement, source, flags=re.MULTILINE)
        assert count == 1, f"tensorpack's param_test.py no longer has {pattern!r}"
    source = source.replace("tensorpack.utils.logger.warning", "tfloop.utils.logger.warning")
    assert "tensorpack" not in source
    (tmp_path / "param_test.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    out = subprocess.run([sys.executable, "-m", "unittest", "-v", "param_test"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=scaled_timeout(80))
    assert out.returncode == 0, out.stderr[-4000:]
    assert "Ran 6 tests" in out.stderr and "OK" in out.stderr
