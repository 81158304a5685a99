"""The log directory is a value of the run (``trainer.logdir``): given to the trainer or the config,
else logger.set_logger_dir's, fixed when the run starts; callbacks and monitors read it there."""
import ast
import json
import os

import pytest
from support import train_linear

import tfloop
from tfloop.utils import logger

PACKAGE = os.path.dirname(tfloop.__file__)
# Where reading the process's log directory is the point: the trainer's default, tensorpack's
# static JSONWriter.load_existing_json(dir=None), and AutoResumeTrainConfig, which finds its
# checkpoint when it is made (issue 32 item 4 moves that into the trainer's run).
READERS_OF_THE_GLOBAL = {"train/logdir.py", "monitors/json_writer.py", "train/config.py"}


class LogdirSeen(tfloop.Callback):
    """Records ``trainer.logdir`` as the callbacks see it, at setup and at the end."""

    def __init__(self):
        self.seen = []

    def _setup_graph(self):
        self.seen.append(self.trainer.logdir)

    def _after_train(self):
        self.seen.append(self.trainer.logdir)


def test_without_a_log_directory_the_run_has_none(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    seen = LogdirSeen()
    trainer = train_linear([seen])
    assert trainer.logdir is None and seen.seen == [None, None]
    assert os.listdir(tmp_path) == []


def test_the_run_takes_the_logger_directory_when_it_starts(tmp_path):
    trainer = tfloop.SimpleTrainer()
    assert trainer.logdir is None
    first = str(tmp_path / "first")
    logger.set_logger_dir(first)
    assert trainer.logdir == first      # not started: it follows the logger

    class MoveTheLoggerDir(LogdirSeen):
        def _before_train(self):
            logger.set_logger_dir(str(tmp_path / "second"))

    seen = MoveTheLoggerDir()
    train_linear([seen], trainer=trainer, monitors=[tfloop.JSONWriter()])
    assert seen.seen == [first, first] and trainer.logdir == first
    assert os.path.isfile(os.path.join(first, "stats.json"))
    assert sorted(os.listdir(tmp_path / "second")) == [".tfloop.lock", "log.log"]
    with pytest.raises(RuntimeError, match="fixed when it starts"):
        trainer.logdir = str(tmp_path / "third")


def test_a_logdir_given_to_the_config_wins_over_the_logger_directory(tmp_path):
    logger.set_logger_dir(str(tmp_path / "global"))
    mine = str(tmp_path / "mine")
    seen = LogdirSeen()
    train_linear([seen, tfloop.ModelSaver()], monitors=[tfloop.JSONWriter()], logdir=mine)
    assert seen.seen == [mine, mine]
    assert {"stats.json", "checkpoint", "status.json", "model-6.index"} <= set(os.listdir(mine))
    with open(os.path.join(mine, "status.json")) as f:
        assert json.load(f)["state"] == "finished"
    assert sorted(os.listdir(tmp_path / "global")) == [".tfloop.lock", "log.log"]


def test_a_logdir_given_to_the_trainer(tmp_path):
    trainer = tfloop.SimpleTrainer()
    trainer.logdir = tmp_path / "run"
    assert trainer.logdir == str(tmp_path / "run")
    train_linear([tfloop.ModelSaver()], trainer=trainer)
    assert "model-6.index" in os.listdir(tmp_path / "run")


@pytest.mark.parametrize("bad", [3, b"bytes", ["a"]])
def test_a_logdir_that_is_not_a_path_is_refused(bad):
    with pytest.raises(TypeError, match="trainer.logdir must be a directory path"):
        tfloop.SimpleTrainer().logdir = bad
    with pytest.raises(TypeError, match="TrainConfig: logdir must be a directory path"):
        tfloop.TrainConfig(logdir=bad)


def _reads_the_global(path):
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr in ("get_logger_dir",
                                                                 "path_in_logger_dir")]


def test_callbacks_monitors_and_trainers_read_the_run_s_logdir_not_the_global():
    found = {}
    for package in ("callbacks", "monitors", "resume", "train", "predict", "contrib"):
        for root, _, names in os.walk(os.path.join(PACKAGE, package)):
            for name in names:
                path = os.path.join(root, name)
                rel = os.path.relpath(path, PACKAGE)
                if name.endswith(".py") and rel not in READERS_OF_THE_GLOBAL:
                    lines = _reads_the_global(path)
                    if lines:
                        found[rel] = lines
    assert found == {}
