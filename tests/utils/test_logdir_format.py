"""The log directory's format, in milliseconds: file names, records, checkpoints, run status."""
import json
import os
import socket
import subprocess
import sys

import pytest

from tfloop.utils.dirlock import LOCK_FILE_NAME, DirLock, is_locked
from tfloop.utils.logdir_format import (
    DIED,
    FAILED,
    FINISHED,
    RUNNING,
    STATUS_FILE,
    STOPPED,
    UNKNOWN,
    best_checkpoint_records,
    list_checkpoints,
    newest_resume_state,
    read_run_status,
    stat_names,
    status_from_log_line,
    write_run_status,
)


def dead_pid():
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def write_lock_file(path, pid):
    (path / LOCK_FILE_NAME).write_text(json.dumps({"pid": pid, "host": socket.gethostname()}))


@pytest.fixture
def held(tmp_path):
    lock = DirLock(str(tmp_path))
    lock.acquire()
    yield lock
    lock.release()


def test_a_running_status_names_this_process_and_the_end_keeps_it(tmp_path, held):
    write_run_status(str(tmp_path), RUNNING, hyper_params=["learning_rate"])
    status = read_run_status(str(tmp_path))
    assert (status.state, status.reason, status.ended) == (RUNNING, None, False)
    assert status.describe() == f"running (pid {os.getpid()} on {socket.gethostname()})"
    started = status.record["started"]
    write_run_status(str(tmp_path), STOPPED, reason="EarlyStopping: no improvement",
                     global_step=12)
    status = read_run_status(str(tmp_path))
    assert (status.state, status.ended) == (STOPPED, True)
    assert status.describe() == "stopped (EarlyStopping: no improvement)"
    assert status.record["started"] == started and status.record["pid"] == os.getpid()
    assert status.record["hyper_params"] == ["learning_rate"]
    assert status.record["global_step"] == 12 and "ended" in status.record
    write_run_status(str(tmp_path), FINISHED)
    assert read_run_status(str(tmp_path)).describe() == "finished"
    assert sorted(os.listdir(tmp_path)) == [LOCK_FILE_NAME, STATUS_FILE]


def test_a_running_status_without_a_live_lock_holder_is_a_run_that_died(tmp_path):
    write_run_status(str(tmp_path), RUNNING)
    write_lock_file(tmp_path, dead_pid())
    status = read_run_status(str(tmp_path))
    assert status.state == DIED and status.ended
    assert status.reason == (f"process {os.getpid()} on {socket.gethostname()} is gone without "
                             "writing how training ended")


def test_is_locked(tmp_path):
    assert not is_locked(str(tmp_path))                        # no lock file
    write_lock_file(tmp_path, dead_pid())
    assert not is_locked(str(tmp_path))                        # its owner is gone
    write_lock_file(tmp_path, os.getpid())
    assert not is_locked(str(tmp_path))                        # a live pid, but no flock held
    lock = DirLock(str(tmp_path))
    lock.acquire()
    assert is_locked(str(tmp_path))
    lock.release()
    assert not is_locked(str(tmp_path))


def test_a_failed_status_and_a_bad_state(tmp_path):
    write_run_status(str(tmp_path), FAILED, reason="ValueError: bad input")
    assert read_run_status(str(tmp_path)).describe() == "failed (ValueError: bad input)"
    with pytest.raises(ValueError, match="state 'died' is not one of running, finished"):
        write_run_status(str(tmp_path), DIED)


def test_an_unreadable_status_file_is_ignored(tmp_path):
    (tmp_path / STATUS_FILE).write_text("{not json")
    assert read_run_status(str(tmp_path)).state == UNKNOWN


LOG = ["[1123 20:19:46 @logger.py:195] Argv: train.py",
       "[1123 20:19:47 @base.py:10] Start epoch 1 at global step 0 ..."]


@pytest.mark.parametrize("ending, expected", [
    ("Training has finished.", (FINISHED, None)),
    ("Training stopped: EarlyStopping: val-error did not improve",
     (STOPPED, "EarlyStopping: val-error did not improve")),
    ("Ctrl-C: stopping training at global step 5.",
     (STOPPED, "Ctrl-C: stopping training at global step 5.")),
    ("Training failed at global step 22: ValueError: nan", (FAILED, "ValueError: nan")),
])
def test_an_old_log_dir_is_judged_from_its_log(tmp_path, ending, expected):
    (tmp_path / "log.log").write_text("\n".join(LOG + [f"[1123 20:21:51 @x.py:1] {ending}"]))
    status = read_run_status(str(tmp_path))
    assert (status.state, status.reason) == expected
    assert status_from_log_line(ending) == expected


def test_an_old_log_dir_without_an_ending(tmp_path, held):
    (tmp_path / "log.log").write_text("\n".join(
        ["[1123 20:10:00 @x.py:1] Training has finished."] + LOG))   # then a second run started
    assert read_run_status(str(tmp_path)).state == RUNNING
    held.release()
    status = read_run_status(str(tmp_path))
    assert status.state == DIED and "log ends without saying" in status.reason
    assert status_from_log_line("Start epoch 1 at global step 0 ...") is None


def test_an_empty_directory_is_unknown(tmp_path):
    status = read_run_status(str(tmp_path))
    assert (status.state, status.ended, status.describe()) == (UNKNOWN, False, UNKNOWN)


def touch(path, size=0):
    path.write_bytes(b"x" * size)


def test_list_checkpoints_groups_each_checkpoints_files(tmp_path):
    for step in (3, 12):
        touch(tmp_path / f"model-{step}.index", 10)
        touch(tmp_path / f"model-{step}.data-00000-of-00001", 100)
    touch(tmp_path / "model-12.iterator", 5)
    touch(tmp_path / "model-12.resume.json", 1000)
    touch(tmp_path / "model.v2-7.index", 1)
    touch(tmp_path / "model.v2-7.data-00000-of-00001", 2)
    touch(tmp_path / "min-cost.index")
    touch(tmp_path / "model-99.data-00000-of-00001")           # no index: not a checkpoint
    found = list_checkpoints(str(tmp_path))
    assert [(c["name"], c["step"], c["bytes"], c["resumable"]) for c in found] == [
        ("model-3", 3, 110, False), ("model.v2-7", 7, 3, False), ("model-12", 12, 115, True)]
    assert found[0]["time"] == os.path.getmtime(tmp_path / "model-3.index")


def test_best_checkpoint_records_and_the_newest_resume_state(tmp_path):
    best = {"stat": "cost", "mode": "min",
            "checkpoints": [{"rank": 1, "checkpoint": "min-cost", "global_step": 6}]}
    (tmp_path / "min-cost.json").write_text(json.dumps(best))
    (tmp_path / "max-acc.json").write_text("{broken")
    (tmp_path / "stats.json").write_text("[]")
    assert best_checkpoint_records(str(tmp_path)) == [best]
    for step in (3, 20):
        (tmp_path / f"model-{step}.resume.json").write_text(json.dumps(
            {"epoch": step, "local_step": 0, "global_step": step}))
    (tmp_path / "model-100.resume.json").write_text("{half-writ")
    assert newest_resume_state(str(tmp_path)) == {"epoch": 20, "local_step": 0,
                                                  "global_step": 20, "checkpoint": "model-20"}
    (tmp_path / "empty").mkdir()
    assert newest_resume_state(str(tmp_path / "empty")) is None


def test_stat_names_leave_out_the_position():
    assert stat_names([{"epoch_num": 1, "global_step": 3, "cost": 1},
                       {"epoch_num": 2, "global_step": 6, "acc": 0.5}]) == ["acc", "cost"]


def test_an_ended_run_with_a_new_live_owner_is_a_new_run_starting(tmp_path):
    write_run_status(str(tmp_path), RUNNING)
    write_run_status(str(tmp_path), FINISHED)
    record = json.loads((tmp_path / STATUS_FILE).read_text())
    (tmp_path / STATUS_FILE).write_text(json.dumps(dict(record, pid=dead_pid())))
    assert read_run_status(str(tmp_path)).state == FINISHED        # nobody holds the lock
    lock = DirLock(str(tmp_path))
    lock.acquire()                                                  # the next run, this process
    status = read_run_status(str(tmp_path))
    assert status.state == RUNNING and status.record["pid"] == os.getpid()
    lock.release()
    (tmp_path / STATUS_FILE).write_text(json.dumps(record))          # the writer holds it: ended
    lock.acquire()
    assert read_run_status(str(tmp_path)).state == FINISHED
    lock.release()


def test_the_run_status_is_public():
    import tfloop
    import tfloop.utils
    assert tfloop.read_run_status is tfloop.utils.read_run_status is read_run_status
    assert tfloop.RunStatus.__name__ == "RunStatus"
