"""tensorpack 0.11's own unit tests (every ``unittest`` module in its package), run against
tfloop with only their imports changed. The files are read from the installed tensorpack at test
time and rewritten line by line (nothing of them is kept in this repository); each runs with
``python -m unittest`` in a process of its own."""
import os
import re
import subprocess
import sys

import pytest
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# tfloop leaves TensorFlow's eager default alone (tensorpack disabled it in
# launch_train_with_config): test modules building TF1 graph ops at top level turn it off
# themselves, as docs/migrating.md says for such scripts.
TF1 = (r"^import tensorflow as tf$", "from tfloop import tfv1 as tf\ntf.disable_eager_execution()")

# file in tensorpack's package -> (tests it holds, [(import line, tfloop import)]).
# Every pattern must match exactly once.
SUITES = {
    "callbacks/param_test.py": (6, [
        (r"^import tensorflow as tf$", "import unittest.mock\nfrom tfloop import tfv1 as tf"),
        (r"^from \.\.utils import logger$", "from tfloop.utils import logger"),
        (r"^from \.\.train\.trainers import NoOpTrainer$", "from tfloop import NoOpTrainer"),
        (r"^from \.param import ", "from tfloop import "),
        (r"tensorpack\.utils\.logger\.warning", "tfloop.utils.logger.warning"),
    ]),
    "tfutils/unit_tests.py": (2, [
        TF1,
        (r"^from \.\.utils import logger$", "from tfloop.utils import logger"),
        (r"^from \.scope_utils import ", "from tfloop.tfutils.scope_utils import "),
    ]),
    "models/models_test.py": (3, [
        TF1,
        (r"^from \.conv2d import ", "from tfloop.models import "),
        (r"^from \.pool import ", "from tfloop.models import "),
        (r"^    from tensorpack\.utils import logger$", "    from tfloop.utils import logger"),
    ]),
    "dataflow/imgaug/imgaug_test.py": (4, [
        (r"^from \.base import ", "from tfloop.dataflow.imgaug import "),
        (r"^from \.imgproc import ", "from tfloop.dataflow.imgaug import "),
        (r"^from \.noise import ", "from tfloop.dataflow.imgaug import "),
        (r"^from \.misc import ", "from tfloop.dataflow.imgaug import "),
    ]),
    "dataflow/serialize_test.py": (4, [
        (r"^from tensorpack\.dataflow import ", "from tfloop.dataflow import "),
        (r"^from tensorpack\.dataflow\.base import ", "from tfloop.dataflow.base import "),
    ]),
}


def _package_dir():
    tensorpack = pytest.importorskip("tensorpack", reason="tensorpack 0.11 (the test extra)")
    return os.path.dirname(tensorpack.__file__)


def test_every_unittest_module_of_tensorpack_is_covered():
    found = set()
    for root, _, files in os.walk(_package_dir()):
        for name in files:
            path = os.path.join(root, name)
            if name.endswith(".py"):
                with open(path, encoding="utf-8") as f:
                    if re.search(r"^import unittest|unittest\.TestCase", f.read(), re.MULTILINE):
                        found.add(os.path.relpath(path, _package_dir()))
    assert found == set(SUITES)


def rewrite(source, rewrites, name):
    for pattern, replacement in rewrites:
        source, count = re.subn(pattern, replacement, source, flags=re.MULTILINE)
        assert count == 1, f"tensorpack's {name} no longer has {pattern!r}"
    assert "tensorpack" not in re.sub(r"#.*", "", source), f"{name}: an import is left"
    return source


@pytest.mark.slow
def test_tensorpack_unit_tests_pass_with_imports_changed(tmp_path):
    modules = []
    for name, (_, rewrites) in sorted(SUITES.items()):
        with open(os.path.join(_package_dir(), name), encoding="utf-8") as f:
            source = rewrite(f.read(), rewrites, name)
        modules.append(os.path.basename(name)[:-3])
        (tmp_path / f"{modules[-1]}.py").write_text(source)
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    # one process for all (TensorFlow is imported once)
    out = subprocess.run([sys.executable, "-m", "unittest", "-v", *modules], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=scaled_timeout(150))
    report = out.stderr[-6000:]
    assert out.returncode == 0, report
    total = sum(count for count, _ in SUITES.values())
    assert f"Ran {total} tests" in out.stderr and "\nOK" in out.stderr, report
    assert "skipped" not in out.stderr, report
