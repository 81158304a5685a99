"""One owner per log directory: a live run's directory is never deleted, moved or shared."""
import json
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest
from support import scaled_timeout

from tfloop.utils import logger
from tfloop.utils.dirlock import LOCK_FILE_NAME, DirLock, LogDirInUseError


def _own_and_wait(path, ready):
    logger.set_logger_dir(path, action="keep")
    ready.set()
    signal.pause()


@pytest.fixture
def other_run(tmp_path):
    """A forked process that owns ``tmp_path/run`` as its log directory until the test ends."""
    path = str(tmp_path / "run")
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    process = ctx.Process(target=_own_and_wait, args=(path, ready))
    process.start()
    assert ready.wait(scaled_timeout(10))
    with open(os.path.join(path, "model-5.index"), "w") as f:
        f.write("the live run's checkpoint")
    yield path, process
    process.kill()
    process.join(10)


@pytest.mark.parametrize("action", ["keep", "delete", "backup", "new", None])
def test_a_live_runs_directory_is_refused_and_left_alone(tmp_path, other_run, action):
    path, process = other_run
    before = sorted(os.listdir(path))
    with pytest.raises(LogDirInUseError,
                       match=f"is in use by process {process.pid} on host") as info:
        logger.set_logger_dir(path, action=action)
    assert info.value.owner["pid"] == process.pid
    assert sorted(os.listdir(path)) == before
    assert sorted(os.listdir(tmp_path)) == ["run"]
    assert logger.get_logger_dir() is None


def test_the_lock_of_a_killed_run_is_taken_over(tmp_path, other_run, log_lines):
    path, process = other_run
    os.kill(process.pid, signal.SIGKILL)
    process.join(scaled_timeout(5))
    assert logger.set_logger_dir(path, action="keep") == path
    assert any(f"the lock of process {process.pid}" in line and "no longer running" in line
               for line in log_lines)
    with open(os.path.join(path, LOCK_FILE_NAME)) as f:
        assert json.load(f)["pid"] == os.getpid()
    assert os.path.exists(os.path.join(path, "model-5.index"))


def test_released_on_unset_and_on_another_dir(tmp_path):
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    logger.set_logger_dir(first)
    assert DirLock.held_by_this_process(first) is not None
    logger.set_logger_dir(second)
    assert DirLock.held_by_this_process(first) is None
    other = DirLock(first)
    other.acquire()   # free now: another process could own it
    other.release()
    logger.unset_logger_dir()
    assert DirLock.held_by_this_process(second) is None


def test_the_same_process_can_set_its_own_dir_again(tmp_path):
    path = str(tmp_path / "run")
    logger.set_logger_dir(path)
    assert logger.set_logger_dir(path, action="keep") == path
    assert logger.set_logger_dir(path, action="delete") == path
    assert sorted(os.listdir(path)) == [LOCK_FILE_NAME, "log.log"]


def test_a_directory_holding_only_a_stale_lock_file_counts_as_empty(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    (path / LOCK_FILE_NAME).write_text(json.dumps({"pid": 1, "host": "elsewhere"}))
    assert logger.set_logger_dir(str(path)) == str(path)


def test_a_non_chief_task_of_a_cluster_shares_the_chiefs_dir(tmp_path, other_run, monkeypatch):
    path, _ = other_run
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                "task": {"type": "worker", "index": 1}}))
    assert logger.set_logger_dir(path, action="keep") == path
    assert DirLock.held_by_this_process(path) is None
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                "task": {"type": "worker", "index": 0}}))
    with pytest.raises(LogDirInUseError):
        logger.set_logger_dir(path, action="keep")


def test_the_lock_of_a_run_that_exited_cleanly_is_taken_over_silently(tmp_path, log_lines):
    path = str(tmp_path / "run")
    code = f"from tfloop.utils import logger; logger.set_logger_dir({path!r}, action='keep')"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=scaled_timeout(30),
                   env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    with open(os.path.join(path, LOCK_FILE_NAME)) as f:
        assert "released" in json.load(f)
    assert logger.set_logger_dir(path, action="keep") == path
    assert not any("no longer running" in line for line in log_lines)
    with open(os.path.join(path, LOCK_FILE_NAME)) as f:
        owner = json.load(f)
    assert owner["pid"] == os.getpid() and "released" not in owner
