"""What a small training prints on the console: one line per epoch, in order, paths relative."""
import io
import re

import pytest
from support import LinearModel, batches, make_regression_data

import tfloop
from tfloop.utils import logger

_PREFIX = re.compile(r"^\[\d{4} \d\d:\d\d:\d\d @[\w.]+:\d+\] ")


@pytest.fixture
def console(tmp_path, monkeypatch):
    """The console's text while the test runs in ``tmp_path``, whose log dir is train_log/run."""
    monkeypatch.chdir(tmp_path)
    stream, before = io.StringIO(), logger.console_stream()
    logger.set_console_stream(stream)
    try:
        yield stream
    finally:
        logger.set_console_stream(before)
        logger.set_verbose(None)


def train(max_epoch=2):
    logger.set_logger_dir("train_log/run", action="keep")
    x, y = make_regression_data(12)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), steps_per_epoch=3,
        max_epoch=max_epoch, callbacks=[tfloop.ModelSaver(), tfloop.MinSaver("cost")])
    try:
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()


def log_lines(text):
    """The console's log lines without their time and place prefix, progress bars left out."""
    return [_PREFIX.sub("", line) for line in text.splitlines() if _PREFIX.match(line)]


def test_one_line_per_epoch_with_time_and_cost_and_the_best_in_order(console, tmp_path):
    train()
    text = console.getvalue()
    lines = log_lines(text)
    assert lines[0] == "Log directory: train_log/run"
    epochs = [i for i, line in enumerate(lines) if line.startswith("epoch ")]
    assert [lines[i].split(" · ")[:2] for i in epochs] == [["epoch 1", "step 3"],
                                                           ["epoch 2", "step 6"]]
    for i in epochs:
        assert re.fullmatch(r"epoch \d · step \d · \d+\.\d\d s · cost [-\d.e]+", lines[i])
        assert lines[i + 1].startswith("MinSaver('cost'): cost=") or i == epochs[-1]
    assert lines[epochs[0] + 1].endswith("is the best; kept as train_log/run/min-cost.")
    assert len(lines) <= len(epochs) * 2 + 3, lines
    routines = (") finished, time:", "Model saved", "Trainable variables", "Argv:", "batches in")
    for routine in routines:
        assert routine not in text
    assert re.search(r"Epoch 2: 100%.*cost=[-\d.]+\]", text), text     # the moving cost
    with open(tmp_path / "train_log" / "run" / "log.log") as f:
        assert "Model saved to train_log/run/model-6." in f.read()     # details: in the file


def test_verbose_shows_the_details_and_a_rerun_is_one_line(console):
    logger.set_verbose(True)
    train(max_epoch=1)
    assert "Model saved to train_log/run/model-3." in log_lines(console.getvalue())
    logger.set_verbose(False)
    console.truncate(0)
    console.seek(0)
    train(max_epoch=1)
    assert log_lines(console.getvalue()) == [
        "Log directory: train_log/run",
        "train_log/run: already finished at epoch 1 of 1; raise max_epoch to train further."]


def test_set_verbose_refuses_what_is_not_a_bool():
    with pytest.raises(TypeError, match=r"set_verbose takes True, False or None, got 'yes'"):
        logger.set_verbose("yes")
