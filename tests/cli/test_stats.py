"""tfloop stats: stats.json of one or more runs as a table, CSV, markdown or JSON."""
import json

import pytest
from cli_support import make_logdir

from tfloop.cli import main
from tfloop.cli.logdir import PARAM, best_record, stat_mode
from tfloop.cli.stats import shortest_float

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
    assert lines[3:] == ["", "run: unknown"]


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
        "lr,param,,,,0.001",
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


def test_stats_without_records_says_so_and_fails(tmp_path):
    (tmp_path / "stats.json").write_text("[]")
    with pytest.raises(SystemExit, match="stats.json in .* has no records yet .* the run is "
                                         "unknown") as stop:
        main(["stats", str(tmp_path)])
    assert stop.value.code not in (0, None)


def test_csv_and_json_write_float32_values_shortest(tmp_path, capsys):
    (tmp_path / "stats.json").write_text(json.dumps(
        [{"epoch_num": 1, "global_step": 3, "learning_rate": 9.999999747378752e-05,
          "cost": 0.30000001192092896, "exact": 0.1}]))
    main(["stats", str(tmp_path), "--format", "csv"])
    assert capsys.readouterr().out.splitlines() == [
        "epoch_num,global_step,cost,exact,learning_rate", "1,3,0.3,0.1,0.0001"]
    main(["stats", str(tmp_path), "--format", "json"])
    assert json.loads(capsys.readouterr().out) == [
        {"epoch_num": 1, "global_step": 3, "cost": 0.3, "exact": 0.1, "learning_rate": 1e-4}]


def test_shortest_float():
    assert [shortest_float(v) for v in (9.999999747378752e-05, 0.1, 0.5, 3, "x", 1e300)] == [
        1e-4, 0.1, 0.5, 3, "x", 1e300]
    assert shortest_float(float("nan")) != shortest_float(float("nan"))


def test_hyper_parameters_are_shown_not_ranked():
    assert stat_mode("learning_rate") == stat_mode("lr") == PARAM
    assert stat_mode("lr", params={"learning_rate"}) == "min"        # status.json says so
    assert stat_mode("val-accuracy") == "max" and stat_mode("cost", params=set()) == "min"
    records = [{"learning_rate": 0.1}, {"learning_rate": 0.01}]
    assert best_record(records, "learning_rate") == (None, PARAM)
