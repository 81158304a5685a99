"""list_checkpoint_files: the one listing of a directory's checkpoints, which the checkpoint
readers (varmanip) and the log-directory readers (logdir_format, the CLI) select from."""
import os

from tfloop.tfutils import varmanip
from tfloop.utils import logdir_format
from tfloop.utils.checkpoint_files import checkpoint_step, list_checkpoint_files


def touch(path, size=0, mtime=None):
    path.write_bytes(b"x" * size)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def a_directory(tmp_path):
    for step, mtime in ((12, 2000), (3, 1000)):
        touch(tmp_path / f"model-{step}.index", 10, mtime)
        touch(tmp_path / f"model-{step}.data-00000-of-00001", 100)
    touch(tmp_path / "model-12.resume.json", 7)
    touch(tmp_path / "model.v2-7.index", 1, 1500)
    touch(tmp_path / "min-cost.index", 1, 500)
    touch(tmp_path / ".model-5.index")                       # hidden: a file being written
    touch(tmp_path / "model-99.data-00000-of-00001")         # no index, not named: not one
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "model-20"\nall_model_checkpoint_paths: "model-12"\n'
        'all_model_checkpoint_paths: "model-20"\n')          # model-20's files are gone
    return str(tmp_path)


def test_one_listing_gives_every_checkpoint_its_files_oldest_first(tmp_path):
    directory = a_directory(tmp_path)
    found = list_checkpoint_files(directory, named=[os.path.join("/elsewhere", "model-20")])
    assert [(c.name, c.step, c.files, c.has_index) for c in found] == [
        ("min-cost", None, ("min-cost.index",), True),
        ("model-3", 3, ("model-3.data-00000-of-00001", "model-3.index"), True),
        ("model.v2-7", 7, ("model.v2-7.index",), True),
        ("model-12", 12, ("model-12.data-00000-of-00001", "model-12.index",
                          "model-12.resume.json"), True),
        ("model-20", 20, (), False)]
    assert [c.time for c in found] == [500, 1000, 1500, 2000, None]
    assert found[1].prefix == os.path.join(directory, "model-3")
    assert list_checkpoint_files(str(tmp_path / "missing")) == []


def test_the_readers_of_checkpoints_and_of_log_directories_agree(tmp_path):
    directory = a_directory(tmp_path)
    prefixes = varmanip.list_checkpoints(directory)            # with the state file's model-20
    assert [os.path.basename(p) for p in prefixes] == [
        "min-cost", "model-3", "model.v2-7", "model-12", "model-20"]
    listed = logdir_format.list_checkpoints(directory)         # what `tfloop ckpts` shows
    assert [(c["name"], c["bytes"], c["time"], c["resumable"]) for c in listed] == [
        ("model-3", 110, 1000, False), ("model.v2-7", 1, 1500, False),
        ("model-12", 110, 2000, True)]
    assert [c["name"] for c in listed] == [
        os.path.basename(p) for p in prefixes if checkpoint_step(p) is not None
        and os.path.exists(p + ".index")]


def test_ties_of_step_go_by_the_index_time_then_the_name(tmp_path):
    touch(tmp_path / "b-4.index", mtime=100)
    touch(tmp_path / "a-4.index", mtime=200)
    touch(tmp_path / "c-4.index", mtime=200)
    assert [c.name for c in list_checkpoint_files(str(tmp_path))] == ["b-4", "a-4", "c-4"]
