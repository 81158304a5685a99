"""What the trainer writes into status.json is what tfloop info, stats and watch report: real
trainings that finish, stop, fail, take a SIGTERM, or are killed with kill -9."""
import os
import signal
import textwrap
import time

import pytest
from forked_python import start_python
from support import LRModel, scaled_timeout, train_linear

import tfloop
from tfloop.cli import main
from tfloop.utils.logdir_format import read_run_status

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class StopAt(tfloop.Callback):
    """Raises ``error`` after global step ``step``."""

    def __init__(self, step, error):
        self.step, self.error = step, error

    def _trigger_step(self):
        if self.global_step == self.step:
            raise self.error


class SignalAt(tfloop.Callback):
    def __init__(self, step, signum):
        self.step, self.signum = step, signum

    def _trigger_step(self):
        if self.global_step == self.step:
            os.kill(os.getpid(), self.signum)


def info_status(logdir, capsys):
    capsys.readouterr()
    assert main(["info", logdir]) == 0
    return next(line for line in capsys.readouterr().out.splitlines()
                if line.startswith("status"))[len("status"):].strip()


def train(callbacks=(), **kwargs):
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(2, 0.01)])
    train_linear(list(callbacks) + [setter], model=LRModel(), max_epoch=3,
                 monitors=[tfloop.JSONWriter()], extra_callbacks=[tfloop.MovingAverageSummary()],
                 **kwargs)


def test_a_finished_run_and_its_hyper_parameters(logdir, capsys):
    train([tfloop.ModelSaver()])
    status = read_run_status(logdir)
    assert status.state == "finished" and status.record["pid"] == os.getpid()
    assert status.record["hyper_params"] == ["learning_rate"]
    assert status.record["global_step"] == 9 and status.record["epoch_num"] == 3
    assert info_status(logdir, capsys) == "finished"
    assert main(["stats", logdir, "--best", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    rows = {line.split(",")[0]: line.split(",")[1:] for line in captured.out.splitlines()}
    assert rows["learning_rate"] == ["param", "", "", "", "0.01"]   # shown, never ranked
    assert rows["cost"][0] == "min"
    assert captured.err.strip() == "run: finished"
    assert main(["watch", logdir]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "The run finished."
    assert main(["ckpts", logdir]) == 0
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()[2:5]] == [
        ["model-3", "3"], ["model-6", "6"], ["model-9", "9"]]


@pytest.mark.parametrize("error, state, exit_type", [
    (tfloop.StopTraining("the target was reached"), "stopped (the target was reached)", None),
    (ValueError("the loss is NaN"), "failed (ValueError: the loss is NaN)", ValueError),
])
def test_a_stopped_and_a_failed_run(logdir, capsys, error, state, exit_type):
    if exit_type is None:
        train([StopAt(4, error)])
    else:
        with pytest.raises(exit_type):
            train([StopAt(4, error)])
    assert info_status(logdir, capsys) == state
    assert main(["stats", logdir]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"run: {state}"
    assert main(["watch", logdir]) == (0 if exit_type is None else 1)
    assert capsys.readouterr().out.splitlines()[-1] == f"The run {state}."


def test_a_run_stopped_by_sigterm(logdir, capsys):
    with pytest.raises(SystemExit) as stop:
        train([SignalAt(5, signal.SIGTERM)])
    assert stop.value.code == 143
    assert info_status(logdir, capsys) == "stopped (SIGTERM at global step 5)"


HANGING_RUN = """
import sys, time
sys.path.insert(0, {tests!r})
import tfloop
from support import train_linear
from tfloop.utils import logger

class HangInEpoch2(tfloop.Callback):
    def _before_epoch(self):
        if self.epoch_num == 2:
            open({marker!r}, "w").close()
            time.sleep(600)

logger.set_logger_dir({logdir!r}, action="keep")
train_linear([HangInEpoch2()], max_epoch=5, monitors=[tfloop.JSONWriter()])
"""


@pytest.mark.slow
def test_a_run_killed_with_sigkill_died(tmp_path, capsys):
    logdir, marker = str(tmp_path / "run"), str(tmp_path / "epoch-1-done")
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent(HANGING_RUN.format(tests=TESTS_DIR, marker=marker,
                                                          logdir=logdir)))
    # In a process forked from one that imported TensorFlow (forked_python), killed with SIGKILL.
    err_path = str(tmp_path / "stderr")
    child = start_python([str(script)], tmp_path, dict(os.environ), os.devnull, err_path)
    try:
        deadline = time.monotonic() + scaled_timeout(60)
        while not os.path.exists(marker):
            assert child.exitcode is None, open(err_path).read()[-2000:]
            assert time.monotonic() < deadline, "the training never ended its first epoch"
            time.sleep(0.05)
        assert info_status(logdir, capsys) == f"running (pid {child.pid} on {os.uname()[1]})"
    finally:
        child.kill()
        child.join()
    assert child.exitcode == -signal.SIGKILL
    status = info_status(logdir, capsys)
    assert status == (f"died (process {child.pid} on {os.uname()[1]} is gone without writing "
                      "how training ended)")
    assert main(["watch", logdir, "--interval", "0.01", "--timeout", "60"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "epoch 1 · step 3"
    assert lines[1] == f"The run {status}."
