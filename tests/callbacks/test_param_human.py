"""HumanHyperParamSetter (a file edited between epochs), asserted epoch by epoch on the learning
rate variable the optimizer really uses."""
import os

import pytest
from support import train_recording_lr

import tfloop
from tfloop.callbacks.param_human import parse_hyper_file


class Editor(tfloop.Callback):
    """Replaces the file with ``versions[epoch]`` after that epoch, before the setter reads it."""

    def __init__(self, path, versions):
        self.path = path
        self.versions = versions

    def _trigger(self):
        text = self.versions.get(self.epoch_num)
        if text is not None:
            with open(self.path + ".tmp", "w") as f:
                f.write(text)
            os.replace(self.path + ".tmp", self.path)


def test_file_edited_between_epochs_with_garbage_and_missing_keys(logdir, log_warnings):
    path = os.path.join(logdir, "hyper.txt")
    editor = Editor(path, {
        1: "learning_rate:0.05\n",
        2: "garbage line\nmomentum: 0.9\n\n# comment\nlearning_rate : 0.02\nfoo:bar\n",
        3: "momentum:0.9\n",
        4: "learning_rate:abc\n",
    })
    setter = tfloop.HumanHyperParamSetter("learning_rate")
    lrs, puts = train_recording_lr([editor, setter], max_epoch=6)
    assert lrs == [0.1, 0.05, 0.02, 0.02, 0.02, 0.02]
    assert puts == [(0, 0.1), (3, 0.05), (6, 0.02), (9, 0.02), (12, 0.02), (15, 0.02)]
    assert setter.path == path
    prefix = "HumanHyperParamSetter('learning_rate'): " + path
    # each version of the file warns once, however often it is read
    assert log_warnings == [
        prefix + " line 1: 'garbage line' ignored: no ':' between name and value; write lines like "
                 "'learning_rate:0.01'.",
        prefix + " line 6: 'foo:bar' ignored: 'bar' is not a number; write lines like "
                 "'learning_rate:0.01'.",
        prefix + " has no line 'learning_rate:<value>'; the value stays as it is.",
        prefix + " line 1: 'learning_rate:abc' ignored: 'abc' is not a number; write lines like "
                 "'learning_rate:0.01'.",
    ]


def test_a_schedule_change_is_not_undone_by_an_old_line(logdir):
    path = os.path.join(logdir, "hyper.txt")
    with open(path, "w") as f:
        f.write("learning_rate:0.2\n")
    schedule = tfloop.ScheduledHyperParamSetter("learning_rate", [(1, 0.05)])
    human = tfloop.HumanHyperParamSetter("learning_rate")
    lrs, puts = train_recording_lr([schedule, Editor(path, {2: "learning_rate:0.3\n"}), human],
                                   max_epoch=3)
    assert lrs == [0.2, 0.05, 0.3]
    # both setters put the value in force when each epoch starts
    assert puts == [(0, 0.2), (0, 0.2), (3, 0.05), (3, 0.05), (6, 0.3), (6, 0.3)]


def test_absolute_path_without_log_dir(tmp_path, log_warnings):
    path = tmp_path / "lr.txt"
    path.write_text("learning_rate:0.3\n")
    setter = tfloop.HumanHyperParamSetter("learning_rate", file_name=str(path))
    lrs, _ = train_recording_lr([setter], max_epoch=2)
    assert lrs == [0.3, 0.3]
    assert log_warnings == []


def test_relative_file_without_log_dir_fails_at_setup():
    with pytest.raises(ValueError, match=r"reads 'hyper.txt' from the log directory, but no log "
                                         r"directory is set: call logger.set_logger_dir"):
        train_recording_lr([tfloop.HumanHyperParamSetter("learning_rate")], max_epoch=1)


def test_missing_file_is_quiet_and_unreadable_file_warns_once(logdir, log_warnings):
    lrs, _ = train_recording_lr([tfloop.HumanHyperParamSetter("learning_rate", "absent.txt")],
                                max_epoch=2)
    assert lrs == [0.1, 0.1]
    assert log_warnings == []
    os.mkdir(os.path.join(logdir, "hyper.txt"))
    lrs, _ = train_recording_lr([tfloop.HumanHyperParamSetter("learning_rate")], max_epoch=2)
    assert lrs == [0.1, 0.1]
    assert len(log_warnings) == 1 and os.path.join(logdir, "hyper.txt") + " is not a regular " \
        "file" in log_warnings[0]


def test_parse_hyper_file():
    values, problems, names = parse_hyper_file(
        "a:1\n  # note\n\nb = 2\n:3\nc:inf\na: 4 \nd:x\n")
    assert values == {"a": 4.0}
    assert problems == [(4, "b = 2", "no ':' between name and value"),
                        (5, ":3", "no name before ':'"), (6, "c:inf", "the value must be finite"),
                        (8, "d:x", "'x' is not a number")]
    assert names == {"a", "c", "d"}


def test_a_fifo_is_never_opened_and_training_goes_on(logdir, log_warnings):
    path = os.path.join(logdir, "hyper.txt")
    os.mkfifo(path)
    setter = tfloop.HumanHyperParamSetter("learning_rate")
    lrs, _ = train_recording_lr([setter], max_epoch=2)
    assert lrs == [0.1, 0.1]
    assert log_warnings == [
        f"HumanHyperParamSetter('learning_rate'): {path} is not a regular file (a FIFO, a "
        "directory or a device), so it is not read; the value stays as it is. Write a plain text "
        "file there."
        ]


def test_a_value_infinite_in_float32_is_ignored_with_a_warning(logdir, log_warnings):
    path = os.path.join(logdir, "hyper.txt")
    editor = Editor(path, {1: "learning_rate:1e39\n", 2: "learning_rate:0.05\n"})
    lrs, _ = train_recording_lr([editor, tfloop.HumanHyperParamSetter("learning_rate")],
                                max_epoch=3)
    assert lrs == [0.1, 0.1, 0.05]
    assert len(log_warnings) == 1
    assert "line 'learning_rate:1e+39' ignored" in log_warnings[0]
    assert "does not fit the variable's dtype float32" in log_warnings[0]
