"""tfloop ckpts, info and watch on a log directory."""
import glob
import json
import os
import threading
import time

from cli_support import live_run, make_logdir

from tfloop.cli import main
from tfloop.cli.info import format_duration
from tfloop.cli.watch import format_record


def test_ckpts_lists_checkpoints_best_and_resume_point(run_dir, capsys):
    assert main(["ckpts", run_dir]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[:4] for line in out.splitlines()[2:5]]
    assert rows == [["model-3", "3", "2.1", "KiB"], ["model-6", "6", "2.1", "KiB"],
                    ["model-9", "9", "2.1", "KiB"]]
    assert [line.split()[-1] for line in out.splitlines()[2:5]] == ["no", "no", "yes"]
    assert ["min-val-error", "val-error", "min", "1", "0.1", "6"] in [
        line.split() for line in out.splitlines()]
    assert out.strip().endswith("Resume point: model-9, epoch 4, step 0 of that epoch "
                                "(global step 9).")


def test_ckpts_of_an_empty_dir(tmp_path, capsys):
    main(["ckpts", str(tmp_path)])
    out = capsys.readouterr().out
    assert f"No checkpoints in {tmp_path}." in out and "Resume point: none" in out


def test_info(run_dir, capsys):
    assert main(["info", run_dir]) == 0
    out = capsys.readouterr().out
    assert "command        train.py --lr 0.1" in out
    assert "versions       tfloop 0.1.0, TensorFlow 2.21.0, Python 3.11.7" in out
    assert "duration       2 min 5 s" in out and "status         finished" in out
    assert "epochs         3" in out and "checkpoints    3" in out
    assert (["val-accuracy", "0.85", "0.9", "max", "2"]
            in [line.split() for line in out.splitlines()])


def test_format_duration():
    assert [format_duration(s) for s in (5, 65, 3725)] == ["5 s", "1 min 5 s", "1 h 2 min 5 s"]


def test_watch_prints_records_until_the_run_ends(tmp_path, capsys):
    path = tmp_path / "live"
    make_logdir(path, records=[{"epoch_num": 1, "global_step": 3, "cost": 0.5}],
                log="[1123 20:19:46 @logger.py:195] Argv: train.py\n", checkpoints=())

    def finish():
        time.sleep(0.3)
        (path / "stats.json").write_text(json.dumps(
            [{"epoch_num": 1, "global_step": 3, "cost": 0.5},
             {"epoch_num": 2, "global_step": 6, "cost": 0.25}]))
        with open(path / "log.log", "a") as f:
            f.write("[1123 20:20:46 @base.py:201] Training has finished.\n")

    writer = threading.Thread(target=finish)
    with live_run(path):
        writer.start()
        assert main(["watch", str(path), "--interval", "0.05", "--timeout", "60"]) == 0
        writer.join()
    assert capsys.readouterr().out.splitlines() == [
        "epoch 1 · step 3 · cost 0.5", "epoch 2 · step 6 · cost 0.25", "The run finished."]


def test_watch_timeout_on_a_run_that_goes_on(tmp_path, capsys):
    path = make_logdir(tmp_path / "live", log="", checkpoints=())
    with live_run(path):
        assert main(["watch", path, "--interval", "0.01", "--timeout", "0.05",
                     "--columns", "^cost"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "epoch 1 · step 3 · cost 0.5"


def test_format_record():
    assert format_record({"epoch_num": 2, "global_step": 6, "x": 3, "cost": 1 / 3}) == \
        "epoch 2 · step 6 · cost 0.33333 · x 3"


def test_watch_waits_for_a_directory_that_does_not_exist_yet(tmp_path, capsys):
    path = tmp_path / "later"

    def start_and_finish():  # the whole directory appears at once, as a finished run's
        time.sleep(0.2)
        make_logdir(tmp_path / "writing", records=[{"epoch_num": 1, "global_step": 3,
                                                    "cost": 0.5}], checkpoints=())
        os.rename(tmp_path / "writing", path)

    writer = threading.Thread(target=start_and_finish)
    writer.start()
    assert main(["watch", str(path), "--interval", "0.02", "--timeout", "60"]) == 0
    writer.join()
    captured = capsys.readouterr()
    assert captured.err.startswith(f"Waiting for {path} to be created")
    assert captured.out.splitlines() == ["epoch 1 · step 3 · cost 0.5", "The run finished."]


def test_watch_gives_up_on_a_directory_that_never_comes(tmp_path, capsys):
    assert main(["watch", str(tmp_path / "never"), "--interval", "0.01", "--timeout", "0.05"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == \
        f"{tmp_path / 'never'} did not appear before the --timeout."


def test_watch_says_it_waits_for_a_run_that_wrote_nothing_yet(tmp_path, capsys):
    with live_run(tmp_path):
        assert main(["watch", str(tmp_path), "--interval", "0.01", "--timeout", "0.05"]) == 0
    assert capsys.readouterr().err == (f"Waiting for the run in {tmp_path}: no stats.json or "
                                       "log.log there yet (stats.json gets a record at the end "
                                       "of each epoch) ...\n")


def test_ckpts_and_info_list_the_directory_once(tmp_path, capsys, monkeypatch):
    path = make_logdir(tmp_path / "many", checkpoints=range(1, 301))
    calls = []
    for module, name in ((os, "scandir"), (os, "listdir"), (glob, "glob")):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _f=original, _n=name, **k: (
            calls.append(_n), _f(*a, **k))[1])
    assert main(["ckpts", path]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 300
    assert len(calls) <= 3        # checkpoints, best checkpoints, resume point: one listing each
    calls.clear()
    assert main(["info", path]) == 0
    assert "checkpoints    300" in capsys.readouterr().out and len(calls) <= 2
