"""What file monitors share: atomic writes and the single no-log-dir warning."""
import os

import pytest

from support import train_linear
from tfloop import CSVWriter, JSONWriter, ScalarPrinter, TFEventWriter
from tfloop.monitors.logdir import atomic_write


def test_atomic_write_replaces_the_file_and_leaves_no_temp_file(tmp_path):
    path = str(tmp_path / "data.txt")
    atomic_write(path, lambda f: f.write("first"))
    atomic_write(path, lambda f: f.write("second"))
    with open(path) as f:
        assert f.read() == "second"
    assert os.listdir(str(tmp_path)) == ["data.txt"]
    assert oct(os.stat(path).st_mode & 0o777) != oct(0o600)


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = str(tmp_path / "data.txt")
    atomic_write(path, lambda f: f.write("complete"))

    def write_half_then_fail(f):
        f.write("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, write_half_then_fail)
    with open(path) as f:
        assert f.read() == "complete"
    assert os.listdir(str(tmp_path)) == ["data.txt"]


def test_one_warning_for_all_file_monitors_without_log_dir(tmp_path, monkeypatch, log_messages):
    monkeypatch.chdir(tmp_path)
    monitors = [TFEventWriter(), JSONWriter(), CSVWriter(), ScalarPrinter()]
    train_linear(monitors=monitors, max_epoch=1)
    warnings = [m for level, m in log_messages if level == "WARNING"]
    assert warnings == ["No log directory is set, so TFEventWriter, JSONWriter, CSVWriter are "
                        "skipped: call tfloop.utils.logger.set_logger_dir(...) before training to "
                        "write them."]
    assert os.listdir(str(tmp_path)) == []


def test_explicit_logdir_needs_no_logger_dir(tmp_path, log_messages):
    train_linear(monitors=[JSONWriter(logdir=tmp_path / "stats")], max_epoch=1)
    assert os.listdir(str(tmp_path / "stats")) == ["stats.json"]
    assert not [m for level, m in log_messages if level == "WARNING"]
