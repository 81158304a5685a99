"""ProgressBar: one bar per epoch, fetched scalars in the postfix, refresh by output kind."""
import io
import itertools

import pytest
import tqdm
from support import train_linear

from tfloop import ProcessTensors, ProgressBar, UnknownNameError
from tfloop.callbacks import progress


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def epoch_displays(output, epoch):
    """Every refresh of one epoch's bar, in order."""
    prefix = f"Epoch {epoch}:"
    return [part for part in output.replace("\n", "\r").split("\r") if part.startswith(prefix)]


@pytest.fixture
def slow_clock(monkeypatch):
    """The bars' clock advances one second each time it is read, as if every step took
    seconds."""
    ticks = itertools.count()
    monkeypatch.setattr(tqdm.std, "time", lambda: float(next(ticks)))
    monkeypatch.setattr(progress._LogLines, "clock", staticmethod(lambda: float(next(ticks))))


def test_log_output_gets_a_line_at_the_end_of_each_epoch_with_the_fetched_cost(slow_clock):
    costs = []
    stream = io.StringIO()
    train_linear([ProcessTensors(["cost"], costs.append)],
                 extra_callbacks=[ProgressBar(["cost"], file=stream)])
    output = stream.getvalue()
    output.encode("ascii")
    assert "\r" not in output and len(output.splitlines()) == 2
    for epoch in (1, 2):
        line, = epoch_displays(output, epoch)
        last_cost = tqdm.tqdm.format_num(float(costs[3 * epoch - 1]))
        assert line.startswith(f"Epoch {epoch}: 100%|##########| 3/3 [")
        assert line.endswith(f"/it, cost={last_cost}]")     # seconds per step on this clock


def test_a_long_epoch_in_a_log_gets_a_line_each_refresh(slow_clock):
    stream = io.StringIO()
    train_linear(extra_callbacks=[ProgressBar(refresh_secs=2, file=stream)], max_epoch=1)
    counts = [d.split("|")[2].split()[0] for d in epoch_displays(stream.getvalue(), 1)]
    # The clock ticks once at the epoch's start and once per step: a line every second step,
    # and one at the end.
    assert counts == ["2/3", "3/3"]


def test_terminal_output_refreshes_every_half_second(slow_clock):
    stream = FakeTerminal()
    train_linear(extra_callbacks=[ProgressBar(file=stream)], max_epoch=1)
    counts = [d.split("|")[2].split()[0] for d in epoch_displays(stream.getvalue(), 1)]
    assert counts[:4] == ["0/3", "1/3", "2/3", "3/3"]


def test_refresh_secs_overrides_the_default(slow_clock):
    stream = FakeTerminal()
    train_linear(extra_callbacks=[ProgressBar(refresh_secs=100, file=stream)], max_epoch=1)
    assert len(epoch_displays(stream.getvalue(), 1)) == 2


def test_without_names_it_adds_nothing_to_the_step():
    bar = ProgressBar(file=io.StringIO())
    trainer = train_linear(extra_callbacks=[bar], max_epoch=1)
    assert bar not in trainer.run_callbacks


def test_bar_is_closed_when_training_fails_mid_epoch():
    class Fail(ProcessTensors):
        def __init__(self):
            super().__init__(["cost"], self._fail)
            self.calls = 0

        def _fail(self, cost):
            self.calls += 1
            if self.calls == 2:
                raise RuntimeError("boom")

    stream = io.StringIO()
    with pytest.raises(RuntimeError, match="boom"):
        train_linear([Fail()], extra_callbacks=[ProgressBar(file=stream)], max_epoch=1)
    displays = epoch_displays(stream.getvalue(), 1)
    assert "1/3" in displays[-1] and stream.getvalue().endswith("\n")


def test_bad_arguments_are_rejected_early():
    with pytest.raises(TypeError, match="write ProgressBar\\(\\['cost'\\]\\)"):
        ProgressBar("cost")
    with pytest.raises(ValueError, match="refresh_secs must be a number >= 0"):
        ProgressBar(refresh_secs=-1)
    with pytest.raises(UnknownNameError, match="'costt'"):
        train_linear(extra_callbacks=[ProgressBar(["costt"], file=io.StringIO())], max_epoch=1)
    with pytest.raises(ValueError, match="shows scalar tensors; 'pred' is of shape \\(None,\\)"):
        train_linear(extra_callbacks=[ProgressBar(["pred"], file=io.StringIO())], max_epoch=1)
