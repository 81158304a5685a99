"""Every ```python block in README.md and docs/ runs as written.

A block is a complete program, run in a fresh process (forked from one that imported tfloop once:
``tests/forked_python.py``) in a fresh directory. A block whose first line
is ``# continues: NAME`` runs after the earlier block of the same page whose first line is
``# block: NAME`` (and after whatever that one continues). Text that must not run goes in a
```text, ```bash or ```console block instead.

A block whose first line is ``# file: NAME.py`` is a script the page tells the reader to save as
``NAME.py`` and run with ``python NAME.py``. A page's file blocks run as a reader runs them: all
in one directory, each written to its file and run in a fresh process, in the order of the page;
then all of them once more, in the same directory, since a script must survive a rerun. The page
explains the marker to its reader.
"""
import glob
import json
import os
import re

import forked_python
import pytest
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_NAME = re.compile(r"^# block: *(\S+)")
_CONTINUES = re.compile(r"^# continues: *(\S+)")
_FILE = re.compile(r"^# file: *(\S+\.py)$")


def doc_pages():
    pages = [os.path.join(ROOT, "README.md")]
    pages += sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))
    return pages


def page_programs(path):
    """``[(label, source)]``: each python block of a page with what it continues prepended."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    named, programs = {}, []
    for match in _BLOCK.finditer(text):
        code = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        first = code.split("\n", 1)[0]
        if _FILE.match(first):
            continue
        continued = _CONTINUES.match(first)
        if continued:
            if continued.group(1) not in named:
                raise ValueError(f"{path} line {line}: '# continues: {continued.group(1)}' names "
                                 f"no earlier '# block: {continued.group(1)}' on this page.")
            code = named[continued.group(1)] + "\n" + code
        name = _NAME.match(first)
        if name:
            named[name.group(1)] = code
        programs.append((f"{os.path.relpath(path, ROOT)}:{line}", code))
    return programs


def page_files(path):
    """``[(file name, source)]``: the ``# file:`` blocks of a page, in its order."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    files = []
    for match in _BLOCK.finditer(text):
        name = _FILE.match(match.group(1).split("\n", 1)[0])
        if name:
            files.append((name.group(1), match.group(1)))
    return files


PROGRAMS = [program for page in doc_pages() for program in page_programs(page)]
FILE_PAGES = [os.path.relpath(page, ROOT) for page in doc_pages() if page_files(page)]


def run_python(args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("CI", None)
    return forked_python.run_python(args, cwd, env, timeout=scaled_timeout(90))


def test_pages_have_blocks():
    assert len(PROGRAMS) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("label,code", PROGRAMS, ids=[label for label, _ in PROGRAMS])
def test_block_runs(label, code, tmp_path):
    out = run_python(["-c", code], tmp_path)
    assert out.returncode == 0, f"{label} failed:\n{out.stdout[-3000:]}\n{out.stderr[-4000:]}"


def test_getting_started_is_made_of_file_blocks_and_explains_them():
    assert "docs/getting_started.md" in FILE_PAGES
    with open(os.path.join(ROOT, "docs", "getting_started.md"), encoding="utf-8") as f:
        text = f.read()
    assert "`# file: train.py`" in text and "# continues:" not in text
    assert [name for name, _ in page_files(os.path.join(ROOT, "docs", "getting_started.md"))] == [
        "train.py", "train_longer.py", "predict.py", "export.py"]


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(150))
@pytest.mark.parametrize("page", FILE_PAGES)
def test_file_blocks_run_in_order_and_again(page, tmp_path):
    files = page_files(os.path.join(ROOT, page))
    for name, code in files:
        (tmp_path / name).write_text(code, encoding="utf-8")
    console = {}
    for round_ in ("first run", "rerun"):
        for name, _ in files:
            out = run_python([name], tmp_path)
            assert out.returncode == 0, (f"{page}: python {name} ({round_}) failed:\n"
                                         f"{out.stdout[-3000:]}\n{out.stderr[-4000:]}")
            console[round_, name] = out.stdout
    if page == os.path.join("docs", "getting_started.md"):
        check_getting_started(console, tmp_path)


def check_getting_started(console, directory):
    """What the page promises: train.py trains 4 epochs, train_longer.py epochs 5 and 6 only, and
    a rerun of either trains nothing and says so."""
    logdir = directory / "train_log" / "getting_started"
    records = json.loads((logdir / "stats.json").read_text())
    assert [r["epoch_num"] for r in records] == [1, 2, 3, 4, 5, 6]
    epoch_lines = {key: re.findall(r"\] (epoch \d+) · step", out) for key, out in console.items()}
    assert epoch_lines["first run", "train.py"] == [f"epoch {n}" for n in (1, 2, 3, 4)]
    assert epoch_lines["first run", "train_longer.py"] == ["epoch 5", "epoch 6"]
    for name, where in (("train.py", "6, past max_epoch=4"), ("train_longer.py", "6 of 6")):
        assert epoch_lines["rerun", name] == []
        assert (f"] train_log/getting_started: already finished at epoch {where}; raise "
                "max_epoch to train further.") in console["rerun", name]
    assert "validation accuracy:" in console["rerun", "predict.py"]
    best = json.loads((logdir / "min-val-error.json").read_text())["checkpoints"][0]
    assert os.listdir(directory / "export" / "getting_started") == [str(best["global_step"])]
