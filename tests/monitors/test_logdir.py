"""What file monitors share: the single no-log-dir warning."""
import os

from support import train_linear

from tfloop import CSVWriter, JSONWriter, ScalarPrinter, TFEventWriter


def test_one_warning_for_all_file_monitors_without_log_dir(tmp_path, monkeypatch, tfloop_log):
    monkeypatch.chdir(tmp_path)
    monitors = [TFEventWriter(), JSONWriter(), CSVWriter(), ScalarPrinter()]
    train_linear(monitors=monitors, max_epoch=1)
    warnings = [m for level, m in tfloop_log if level == "WARNING"]
    assert warnings == ["No log directory is set, so TFEventWriter, JSONWriter, CSVWriter are "
                        "skipped: call tfloop.utils.logger.set_logger_dir(...) before training to "
                        "write them."]
    assert os.listdir(str(tmp_path)) == []


def test_explicit_logdir_needs_no_logger_dir(tmp_path, tfloop_log):
    train_linear(monitors=[JSONWriter(logdir=tmp_path / "stats")], max_epoch=1)
    assert os.listdir(str(tmp_path / "stats")) == ["stats.json"]
    assert not [m for level, m in tfloop_log if level == "WARNING"]
