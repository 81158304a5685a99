"""README's example runs as written, and its two set-up commands match .ci/run and setup.py."""
import json
import os
import re

import pytest
from forked_python import run_python
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow
def test_readme_python_example_trains(tmp_path):
    code = re.search(r"```python\n(.*?)```", read("README.md"), re.S).group(1)
    code = code.replace("max_epoch=10", "max_epoch=2")
    out = run_python(["-c", code], tmp_path, os.environ, scaled_timeout(80))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    logdir = tmp_path / "train_log" / "quickstart"
    assert (logdir / "checkpoint").exists()
    records = json.loads((logdir / "stats.json").read_text())
    assert [r["epoch_num"] for r in records] == [1, 2]
    assert all(isinstance(r["cost"], float) for r in records), records
    assert re.match(r"epoch 2 · step 64 · \d+\.\d\d s · cost ", [
        line for line in out.stdout.splitlines() if " · cost " in line][-1].split("] ", 1)[1])
    event_files = list(logdir.glob("events.out.tfevents.*"))
    assert event_files
    from tfloop.compat import tfv1
    tags, has_graph = set(), False
    for event_file in event_files:
        for event in tfv1.train.summary_iterator(str(event_file)):
            has_graph |= bool(event.graph_def)
            tags.update(value.tag for value in event.summary.value)
    assert has_graph and "cost" in tags


def test_readme_test_command_is_what_ci_runs():
    readme = read("README.md")
    ci = read(".ci/run")
    test_command = 'pip install -e ".[cpu,test]" && python -m pytest -q --run-slow -n 2 --dist ' \
        'worksteal'
    assert test_command in readme
    # CI adds what only changes how long the install takes
    assert test_command.replace("pip install", "pip install --quiet --no-compile") in ci
    for check in ("ruff check tfloop tests bench examples docs", "mypy --config-file mypy.ini"):
        assert check in readme and f"\n{check}\n" in ci
    assert 'pip install -e ".[cpu,examples]" && python examples/mnist_convnet.py' in readme
