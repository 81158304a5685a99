"""ProgressBar in a Jupyter notebook: the kernel's output stream gets one live line per epoch."""
import io
import itertools
import sys
import types

import pytest
import tqdm
from support import train_linear

from tfloop import ProgressBar


class OutStream(io.StringIO):
    """Stands for ipykernel's OutStream: not a terminal, and the class a kernel's stdout is of."""


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def kernel(monkeypatch):
    """The process looks like a Jupyter kernel: ``ipykernel.iostream`` is loaded."""
    module = types.ModuleType("ipykernel.iostream")
    module.OutStream = OutStream
    monkeypatch.setitem(sys.modules, "ipykernel.iostream", module)


@pytest.fixture
def slow_clock(monkeypatch):
    """tqdm's clock advances one second each time it is read, as if every step took seconds."""
    ticks = itertools.count()
    monkeypatch.setattr(tqdm.std, "time", lambda: float(next(ticks)))


def rendered(output):
    """What a notebook frontend shows: each ``\\r`` redraws its line."""
    return [line.rpartition("\r")[2] for line in output.split("\n")]


def test_a_notebook_gets_one_line_per_epoch_redrawn_at_every_refresh(kernel, slow_clock):
    stream = OutStream()
    train_linear(extra_callbacks=[ProgressBar(["cost"], file=stream)], max_epoch=2)
    output = stream.getvalue()
    lines = output.split("\n")
    assert len(lines) == 3 and lines[2] == ""      # one line per epoch, ended when it ends
    for epoch, line in zip((1, 2), lines):
        displays = line.split("\r")[1:]
        assert all(d.startswith(f"Epoch {epoch}:") for d in displays)
        counts = [d.split("|")[2].split()[0] for d in displays]
        assert counts[:4] == ["0/3", "1/3", "2/3", "3/3"]
    shown = rendered(output)
    assert shown[0].startswith("Epoch 1: 100%|██████████| 3/3")
    assert shown[1].startswith("Epoch 2: 100%|██████████| 3/3") and "cost=" in shown[1]


def test_refresh_secs_still_overrides_the_notebook_default(kernel, slow_clock):
    stream = OutStream()
    train_linear(extra_callbacks=[ProgressBar(refresh_secs=100, file=stream)], max_epoch=1)
    assert stream.getvalue().count("\r") == 2     # the start and the end


def test_without_a_kernel_the_same_stream_is_a_log(slow_clock):
    stream = OutStream()
    train_linear(extra_callbacks=[ProgressBar(file=stream)], max_epoch=1)
    assert "\r" not in stream.getvalue()
    line, = stream.getvalue().splitlines()
    assert "##########| 3/3" in line
    stream.getvalue().encode("ascii")


def test_in_a_kernel_a_file_stays_a_log_and_a_terminal_a_terminal(kernel, slow_clock):
    log, terminal = io.StringIO(), FakeTerminal()
    train_linear(extra_callbacks=[ProgressBar(file=log)], max_epoch=1)
    train_linear(extra_callbacks=[ProgressBar(file=terminal)], max_epoch=1)
    assert "\r" not in log.getvalue() and len(log.getvalue().splitlines()) == 1
    log.getvalue().encode("ascii")
    assert terminal.getvalue().count("\r") >= 4
