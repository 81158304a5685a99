"""Every ```python block in README.md and docs/ runs as written.

A block is a complete program, run in a subprocess in a fresh directory. A block whose first line
is ``# continues: NAME`` runs after the earlier block of the same page whose first line is
``# block: NAME`` (and after whatever that one continues). Text that must not run goes in a
```text, ```bash or ```console block instead.
"""
import glob
import os
import re
import subprocess
import sys

import pytest
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_NAME = re.compile(r"^# block: *(\S+)")
_CONTINUES = re.compile(r"^# continues: *(\S+)")


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
        continued = _CONTINUES.match(first)
        if continued:
            if continued.group(1) not in named:
                raise ValueError(f"{path} line {line}: '# continues: {continued.group(1)}' names no "
                                 f"earlier '# block: {continued.group(1)}' on this page.")
            code = named[continued.group(1)] + "\n" + code
        name = _NAME.match(first)
        if name:
            named[name.group(1)] = code
        programs.append((f"{os.path.relpath(path, ROOT)}:{line}", code))
    return programs


PROGRAMS = [program for page in doc_pages() for program in page_programs(page)]


def test_pages_have_blocks():
    assert len(PROGRAMS) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("label,code", PROGRAMS, ids=[label for label, _ in PROGRAMS])
def test_block_runs(label, code, tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("CI", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=scaled_timeout(90), stdin=subprocess.DEVNULL)
    assert out.returncode == 0, f"{label} failed:\n{out.stdout[-3000:]}\n{out.stderr[-4000:]}"
