"""Log directory actions, the log file, and no hanging prompt without a terminal."""
import json
import os
import uuid

import pytest
from support import train_linear

from tfloop.utils import files, logger


def make_existing(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    (path / "old.txt").write_text("old")
    return str(path)


def test_new_dir_is_created_and_log_file_written(tmp_path):
    path = str(tmp_path / "a" / "b")
    assert logger.set_logger_dir(path) == path
    logger.info("hello from the test")
    text = open(os.path.join(path, "log.log")).read()
    assert "hello from the test" in text and "Log directory: " + path in text


def test_existing_dir_without_action_in_a_non_interactive_process(tmp_path):
    path = make_existing(tmp_path)
    with pytest.raises(FileExistsError, match="already exists and no action was given"):
        logger.set_logger_dir(path)


@pytest.mark.parametrize("action", ["keep", "k"])
def test_keep(tmp_path, action):
    path = make_existing(tmp_path)
    logger.set_logger_dir(path, action=action)
    assert os.path.exists(os.path.join(path, "old.txt"))


def test_backup_moves_the_old_dir(tmp_path):
    path = make_existing(tmp_path)
    logger.set_logger_dir(path, action="backup")
    backups = [p for p in os.listdir(tmp_path) if p.startswith("run") and p != "run"]
    assert len(backups) == 1
    assert os.path.exists(tmp_path / backups[0] / "old.txt")
    assert not os.path.exists(os.path.join(path, "old.txt"))


def test_delete_removes_the_old_content(tmp_path):
    path = make_existing(tmp_path)
    logger.set_logger_dir(path, action="d")
    assert sorted(os.listdir(path)) == [".tfloop.lock", "log.log"]


def test_new_uses_another_dir(tmp_path):
    path = make_existing(tmp_path)
    new = logger.set_logger_dir(path, action="new")
    assert new != path and new.startswith(path)
    assert logger.get_logger_dir() == new


def test_unknown_action(tmp_path):
    with pytest.raises(ValueError, match="Unknown log dir action 'overwrite'"):
        logger.set_logger_dir(str(tmp_path), action="overwrite")


def test_variable_table_goes_to_the_log_file(logdir):
    train_linear([], max_epoch=1)
    text = open(os.path.join(logdir, "log.log")).read()
    assert "name    shape      size  device    dtype" in text
    assert "Number of parameters: 3" in text


@pytest.mark.parametrize("action", ["delete", "backup", "keep", "new", None])
@pytest.mark.parametrize("dirname", ["", " ", ".", "./", "sub/..", "PATH_EMPTY", "PARENT"])
def test_the_working_directory_is_never_a_log_dir(tmp_path, monkeypatch, dirname, action):
    import pathlib
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "train.py").write_text("precious")
    monkeypatch.chdir(work)
    dirname = {"PATH_EMPTY": pathlib.Path(""), "PARENT": ".."}.get(dirname, dirname)
    with pytest.raises(ValueError, match="give a directory of its own"):
        logger.set_logger_dir(dirname, action=action)
    assert sorted(os.listdir(work)) == ["src", "train.py"]
    assert sorted(os.listdir(tmp_path)) == ["work"]
    assert logger.get_logger_dir() is None


@pytest.mark.parametrize("dirname", [None, 3, ["a"]])
def test_a_log_dir_that_is_not_a_path(dirname):
    with pytest.raises(TypeError, match="needs a directory path"):
        logger.set_logger_dir(dirname, action="delete")
    assert not os.path.exists("None")


def test_tensorpack_logger_functions_set_level_filter_and_critical(tfloop_log):
    import logging
    seen = []

    def keep(record):
        seen.append(record.getMessage())
        return "secret" not in record.getMessage()

    logger.addFilter(keep)
    try:
        logger.setLevel(logging.WARNING)
        logger.info("hidden by the level")
        logger.critical("shown")
        logger.warning("a secret")
    finally:
        logger.setLevel(logging.INFO)
        logging.getLogger("tfloop").removeFilter(keep)
    assert tfloop_log == [("CRITICAL", "shown")]
    assert seen == ["shown", "a secret"]


def test_a_log_file_that_cannot_be_written_is_reported_once_per_burst(tmp_path, capfd):
    path = str(tmp_path / "run")
    logger.set_logger_dir(path)
    handler = logger._FILE_HANDLER
    good = handler.stream
    handler.stream = open("/dev/full", "w")   # every write: No space left on device
    try:
        for i in range(5):
            logger.info(f"lost line {i}")
    finally:
        full, handler.stream = handler.stream, good
        try:
            full.close()
        except OSError:
            pass
    logger.info("written again")
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Logging error" not in err
    assert err.count("tfloop: cannot write the log file {}".format(
        os.path.join(path, "log.log"))) == 1
    assert "No space left on device" in err
    assert err.count("writing the log file") == 1
    text = open(os.path.join(path, "log.log")).read()
    assert "written again" in text and "lost line" not in text


def test_path_in_logger_dir_keeps_absolute_paths_and_needs_a_log_dir_for_relative_ones(tmp_path):
    logger.unset_logger_dir()
    assert logger.path_in_logger_dir(str(tmp_path / "a.txt"), "unused") == str(tmp_path / "a.txt")
    with pytest.raises(ValueError, match="^X needs a log directory$"):
        logger.path_in_logger_dir("a.txt", "X needs a log directory")
    logger.set_logger_dir(str(tmp_path / "log"), action="new")
    try:
        assert logger.path_in_logger_dir("a.txt", "unused") == str(tmp_path / "log" / "a.txt")
    finally:
        logger.unset_logger_dir()


def test_processes_probing_one_log_dir_at_once_do_not_see_each_others_probe(tmp_path):
    # The tasks of a cluster all set the chief's log directory at the same moment: each one's
    # writability probe must be its own file, never one another task removes under it.
    from concurrent.futures import ThreadPoolExecutor

    from tfloop.utils.logdir import _check_writable

    def probe_often(_):
        for _ in range(200):
            _check_writable(str(tmp_path))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(probe_often, range(8)))
    assert os.listdir(tmp_path) == []


@pytest.fixture
def ram_root():
    root = f"ram://tfloop-test-{uuid.uuid4().hex[:12]}"
    yield root
    files.rmtree(root)


def test_a_log_dir_on_ram_gets_its_log_file_through_tensorflow(ram_root, tmp_path, monkeypatch,
                                                               log_warnings):
    monkeypatch.chdir(tmp_path)
    path = ram_root + "/run"
    assert logger.set_logger_dir(path) == path and logger.get_logger_dir() == path
    assert any("no lock tfloop can hold" in m and path in m for m in log_warnings)
    logger.warning("a warning is written at once")
    assert "a warning is written at once" in files.read_text(path + "/log.log")
    logger.info("an info line")
    logger.unset_logger_dir()
    text = files.read_text(path + "/log.log")
    assert "Log directory: " + path in text and text.rstrip().endswith("an info line")
    assert os.listdir(tmp_path) == []

    assert logger.set_logger_dir(path, action="keep") == path     # appends
    logger.unset_logger_dir()
    assert files.read_text(path + "/log.log").startswith(text)

    assert logger.set_logger_dir(path, action="delete") == path
    logger.unset_logger_dir()
    assert "an info line" not in files.read_text(path + "/log.log")


@pytest.mark.parametrize("task,subdir", [({"type": "worker", "index": 1}, "worker-1"),
                                         ({"type": "ps", "index": 0}, "ps-0"),
                                         ({"type": "worker", "index": 0}, None)])
def test_a_cluster_task_other_than_the_chief_logs_into_a_subdirectory(tmp_path, monkeypatch,
                                                                      task, subdir):
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {}, "task": task}))
    path = str(tmp_path / "run")
    logger.set_logger_dir(path, action="keep")
    assert logger.get_logger_dir() == path
    logger.info("a line of this task")
    logger.unset_logger_dir()
    log_file = os.path.join(path, *([subdir] if subdir else []), "log.log")
    assert "a line of this task" in open(log_file).read()
    assert os.path.exists(os.path.join(path, ".tfloop.lock")) == (subdir is None)


def _fill(directory, names):
    for name in names:
        files.makedirs(files.dirname(files.join(directory, name)))
        with files.open_file(files.join(directory, name), "w") as f:
            f.write(name)


def _tree(directory):
    """Every file under ``directory`` (relative names) with its content."""
    found = {}
    for name in files.listdir(directory):
        path = files.join(directory, name)
        if files.isdir(path):
            found.update({f"{name}/{k}": v for k, v in _tree(path).items()})
        else:
            found[name] = files.read_text(path)
    return found


@pytest.mark.parametrize("action", ["backup", "delete"])
def test_backup_and_delete_on_ram_leave_siblings_whose_names_share_a_prefix(ram_root, action,
                                                                           tmp_path, monkeypatch):
    # TensorFlow's ram:// lists run1_old in run1 (as "_old"), and its rmtree fails on such names.
    monkeypatch.chdir(tmp_path)
    run1, old, run10 = ram_root + "/run1", ram_root + "/run1_old", ram_root + "/run10"
    _fill(run1, ["stats.json", "model-4.index", "sub/deeper/events"])
    _fill(old, ["stats.json", "model-9.index"])
    _fill(run10, ["x/y"])
    _fill(ram_root, ["run1.txt"])
    assert logger.set_logger_dir(run1, action=action) == run1
    logger.info("the new run")
    logger.unset_logger_dir()
    assert _tree(old) == {"stats.json": "stats.json", "model-9.index": "model-9.index"}
    assert _tree(run10) == {"x/y": "x/y"}
    assert sorted(_tree(run1)) == ["log.log"]
    siblings = sorted(files.listdir(ram_root))
    assert files.read_text(ram_root + "/run1.txt") == "run1.txt"
    if action == "delete":
        assert siblings == ["run1", "run1.txt", "run10", "run1_old"]
    else:
        backup, = [name for name in siblings
                   if name not in ("run1", "run1.txt", "run10", "run1_old")]
        assert backup.startswith("run1")
        assert _tree(files.join(ram_root, backup)) == {
            "stats.json": "stats.json", "model-4.index": "model-4.index",
            "sub/deeper/events": "sub/deeper/events"}
