"""tfloop stats: stats.json of one or more runs as a table, CSV, markdown or JSON."""
import json

import pytest
from cli_support import make_logdir

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
    with pytest.raises(SystemExit, match="--last must be a positive number, got 0"):
        main(["stats", write_stats(tmp_path), "--last", "0"])


def test_formats(run_dir, capsys):
    main(["stats", run_dir, "--format", "csv", "--columns", "cost"])
    assert capsys.readouterr().out.splitlines() == [
        "epoch_num,global_step,cost", "1,3,0.5", "2,6,0.25", "3,9,0.3"]
    main(["stats", run_dir, "--format", "json", "--columns", "^lr$"])
    assert json.loads(capsys.readouterr().out) == [
        {"epoch_num": 1, "global_step": 3}, {"epoch_num": 2, "global_step": 6, "lr": 0.01},
        {"epoch_num": 3, "global_step": 9, "lr": 0.001}]
    main(["stats", run_dir, "--format", "markdown", "--columns", "cost"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].replace(" ", "") == "|epoch_num|global_step|cost|"
    assert lines[2].replace(" ", "") == "|1|3|0.5|"


def test_best_row_per_stat(run_dir, capsys):
    main(["stats", run_dir, "--best", "--format", "csv"])
    assert capsys.readouterr().out.splitlines() == [
        "stat,mode,best,epoch_num,global_step,last",
        "cost,min,0.25,2,6,0.3",
        "lr,min,0.001,3,9,0.001",
        "val-accuracy,max,0.9,2,6,0.85",
        "val-error,min,0.1,2,6,0.15"]


def test_several_runs_side_by_side(tmp_path, capsys):
    a = make_logdir(tmp_path / "a")
    b = make_logdir(tmp_path / "b", records=[{"epoch_num": 1, "global_step": 3, "cost": 0.7}])
    main(["stats", a, b, "--columns", "^cost$", "--format", "csv"])
    assert capsys.readouterr().out.splitlines() == [
        "epoch_num,a/cost,b/cost", "1,0.5,0.7", "2,0.25,", "3,0.3,"]
    main(["stats", a, b, "--best", "--columns", "^cost$", "--format", "csv"])
    assert capsys.readouterr().out.splitlines() == [
        "run,stat,mode,best,epoch_num,global_step,last", "a,cost,min,0.25,2,6,0.3",
        "b,cost,min,0.7,1,3,0.7"]


def test_not_a_directory(tmp_path):
    with pytest.raises(SystemExit, match="is not a directory: give a tfloop log directory"):
        main(["stats", str(tmp_path / "missing")])


def test_corrupt_stats_file(tmp_path):
    (tmp_path / "stats.json").write_text("[{")
    with pytest.raises(SystemExit, match="stats.json is not valid JSON"):
        main(["stats", str(tmp_path)])
