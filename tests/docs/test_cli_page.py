"""docs/cli.md is current: regenerated from a real run, it shows the same commands printing the
same rows and columns (numbers, dates and column widths may differ from run to run)."""
import os
import re
import subprocess
import sys

import pytest
from support import scaled_timeout

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "cli.md")


def shape(text):
    """The page with every number, date and run of spaces and table rule made alike."""
    text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", "DATE", text)
    text = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", text)
    text = re.sub(r"(N )?(min|h) ", "", text)
    text = re.sub(r"-{2,}", "--", text)
    return [re.sub(r"\s+", " ", line).strip() for line in text.splitlines()]


def test_the_page_names_every_command():
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    from tfloop.cli import COMMANDS
    for command in COMMANDS:
        assert f"## tfloop {command}" in page
    assert "![" in page and os.path.isfile(os.path.join(ROOT, "docs", "images",
                                                         "mnist_convnet.png"))


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(310))
def test_the_page_is_current(tmp_path):
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    max_epoch = re.search(r"--max-epoch (\d+)", page).group(1)
    out = subprocess.run([sys.executable, os.path.join(ROOT, "docs", "generate_cli_page.py"),
                          "--output", str(tmp_path / "cli.md"), "--image",
                          str(tmp_path / "plot.png"), "--max-epoch", max_epoch],
                         capture_output=True, text=True, timeout=scaled_timeout(300))
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    assert shape((tmp_path / "cli.md").read_text()) == shape(page), \
        "docs/cli.md is out of date: run python docs/generate_cli_page.py"
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"
