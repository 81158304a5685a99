"""tfloop ckpts, info and watch on a log directory."""
import json
import threading
import time

from cli_support import make_logdir

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
    assert "duration       2 min 5 s" in out and "status         Training has finished." in out
    assert "epochs         3" in out and "checkpoints    3" in out
    assert ["val-accuracy", "0.85", "0.9", "max", "2"] in [line.split() for line in out.splitlines()]


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
    writer.start()
    assert main(["watch", str(path), "--interval", "0.05", "--timeout", "60"]) == 0
    writer.join()
    assert capsys.readouterr().out.splitlines() == [
        "epoch 1 · step 3 · cost 0.5", "epoch 2 · step 6 · cost 0.25", "Training has finished."]


def test_watch_timeout_on_a_run_that_goes_on(tmp_path, capsys):
    path = make_logdir(tmp_path / "live", log="", checkpoints=())
    assert main(["watch", path, "--interval", "0.01", "--timeout", "0.05", "--columns", "^cost"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "epoch 1 · step 3 · cost 0.5"


def test_format_record():
    assert format_record({"epoch_num": 2, "global_step": 6, "x": 3, "cost": 1 / 3}) == \
        "epoch 2 · step 6 · cost 0.33333 · x 3"
