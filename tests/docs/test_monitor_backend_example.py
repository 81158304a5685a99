"""docs/monitors.md shows examples/sqlite_monitor.py verbatim, and that example works."""
import importlib.util
import os
import sqlite3

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "sqlite_monitor.py")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_the_doc_shows_the_example_file_verbatim():
    doc = read(os.path.join(ROOT, "docs", "monitors.md"))
    assert "## Write a monitor backend" in doc
    assert "```python\n" + read(EXAMPLE) + "```\n" in doc


def test_the_example_backend_writes_every_scalar_to_sqlite_in_the_log_dir(tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = importlib.util.spec_from_file_location("sqlite_monitor_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    logdir = tmp_path / "train_log" / "sqlite_monitor"
    for _ in range(2):     # a rerun replaces the table's rows, it does not append to them
        trainer = example.main(str(logdir))
        history = trainer.monitors.get_history("cost")
        assert [step for step, _ in history] == [4, 8, 12]
        with sqlite3.connect(logdir / "scalars.db") as db:
            rows = list(db.execute("SELECT epoch, global_step, name, value FROM scalars"))
        assert rows == [(epoch, step, "cost", value)
                        for epoch, (step, value) in zip((1, 2, 3), history)]
        printed = capsys.readouterr().out
        assert str(rows[-1]) in printed
    assert os.listdir(tmp_path) == ["train_log"]      # nothing in the working directory
