"""The tfloop command prints a log directory's stats.json as a table."""
import json

import pytest

from tfloop.cli import main

RECORDS = [{"epoch_num": 1, "global_step": 3, "cost": 0.5, "val-error": 0.2},
           {"epoch_num": 2, "global_step": 6, "cost": 0.25, "val-error": 0.1, "lr": 0.01}]


def write_stats(tmp_path):
    (tmp_path / "stats.json").write_text(json.dumps(RECORDS))
    return str(tmp_path)


def test_stats_table(tmp_path, capsys):
    assert main(["stats", write_stats(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["epoch_num", "global_step", "cost", "lr", "val-error"]
    assert lines[2].split() == ["1", "3", "0.5", "0.2"]
    assert lines[3].split() == ["2", "6", "0.25", "0.01", "0.1"]


def test_stats_last_and_columns(tmp_path, capsys):
    main(["stats", write_stats(tmp_path), "--last", "1", "--columns", "^val"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["epoch_num", "global_step", "val-error"]
    assert lines[2].split() == ["2", "6", "0.1"]
    assert len(lines) == 3


def test_stats_errors(tmp_path, capsys):
    with pytest.raises(SystemExit, match="No stats.json in"):
        main(["stats", str(tmp_path)])
    with pytest.raises(SystemExit, match="not a valid regular expression"):
        main(["stats", write_stats(tmp_path), "--columns", "("])
    with pytest.raises(SystemExit):
        main(["stats", str(tmp_path), "--last", "0"])
    assert "--last must be a positive number" in capsys.readouterr().err
