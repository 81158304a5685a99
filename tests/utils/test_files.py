"""The file layer: local paths through os, URLs through TensorFlow's file layer (``ram://`` is
TensorFlow's own in-memory filesystem), and a clear refusal of a scheme TensorFlow does not know."""
import json
import os
import uuid

import pytest

from tfloop.compat import tf
from tfloop.utils import files
from tfloop.utils.dirlock import DirLock, is_locked
from tfloop.utils.fs import atomic_write, display_path, read_json_records


@pytest.fixture
def ram_dir():
    """A fresh directory of TensorFlow's in-memory filesystem, removed after the test."""
    path = f"ram://tfloop-test-{uuid.uuid4().hex[:12]}/run"
    files.makedirs(path)
    yield path
    files.rmtree(files.dirname(path))


@pytest.mark.parametrize("path,scheme", [
    ("gs://bucket/run", "gs"), ("ram://run", "ram"), ("S3://b/x", "s3"),
    ("train_log/run", None), ("/abs/run", None), ("weird:name/run", None), ("", None)])
def test_scheme_of(path, scheme):
    assert files.scheme_of(path) == scheme
    assert files.is_url(path) == (scheme is not None)


def test_a_url_is_never_made_a_local_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert files.resolve("ram://bucket/run") == "ram://bucket/run"
    assert files.join("gs://bucket/run", "stats.json") == "gs://bucket/run/stats.json"
    assert files.dirname("gs://bucket/run/model-4") == "gs://bucket/run"
    assert files.basename("gs://bucket/run/") == "run"
    assert display_path("gs://bucket/run") == "gs://bucket/run"
    assert files.resolve("run") == os.path.join(str(tmp_path), "run")


@pytest.mark.parametrize("url,plugin", [("s3://bucket/run", "tensorflow-io"),
                                        ("hdfs://namenode/run", "tensorflow-io"),
                                        ("foo://x/run", "the TensorFlow file system plugin")])
def test_an_unknown_scheme_is_refused_with_the_plugin_to_install(url, plugin, tmp_path,
                                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    scheme = url.split(":")[0]
    for call in (files.resolve, files.makedirs, files.listdir, files.isdir):
        with pytest.raises(files.UnknownSchemeError) as raised:
            call(url)
        message = str(raised.value)
        assert f"scheme {scheme!r}" in message and plugin in message and url in message
        assert "ram://" in message      # the schemes it does know
    assert os.listdir(tmp_path) == []


def test_files_on_ram_round_trip(ram_dir):
    path = files.join(ram_dir, "a.txt")
    with files.open_file(path, "w") as f:
        f.write("hello\n")
    with files.open_file(path, "a") as f:
        f.write("more\n")
    assert files.read_text(path) == "hello\nmore\n"
    assert files.size(path) == len("hello\nmore\n")
    assert files.isfile(path) and not files.isdir(path)
    files.copy(path, path + ".copy")
    files.rename(path + ".copy", files.join(ram_dir, "b.txt"))
    assert sorted(files.listdir(ram_dir)) == ["a.txt", "b.txt"]
    files.remove(path)
    assert not files.exists(path)
    with pytest.raises(FileNotFoundError):
        files.read_text(path)
    with pytest.raises(FileExistsError):
        files.open_file(files.join(ram_dir, "b.txt"), "x")


def test_a_prefix_of_a_file_name_on_ram_is_not_a_directory(ram_dir):
    # TensorFlow's ram:// says that any prefix of a name is a directory.
    atomic_write(files.join(ram_dir, "model-4.index"), b"x")
    assert tf.io.gfile.isdir(files.join(ram_dir, "model-4"))
    assert not files.isdir(files.join(ram_dir, "model-4"))
    assert files.isdir(ram_dir)
    files.makedirs(files.join(ram_dir, "sub"))
    assert files.isdir(files.join(ram_dir, "sub"))


def test_a_ram_directory_holds_only_its_own_names_and_moves_and_goes_alone(ram_dir):
    # TensorFlow's ram:// lists the sibling run_old as "_old" in run, run.txt as ".txt", and its
    # walk and rmtree fail on those names.
    parent = files.dirname(ram_dir)
    for path in ("run/a", "run/sub/b", "run/0abc", "run_old/c", "run.txt", "run0/d"):
        files.makedirs(files.dirname(files.join(parent, path)))
        atomic_write(files.join(parent, path), path.encode())
    assert sorted(tf.io.gfile.listdir(ram_dir)) == [".txt", "0", "0abc", "_old", "a", "sub"]
    assert sorted(files.listdir(ram_dir)) == ["0abc", "a", "sub"]
    files.move_tree(ram_dir, files.join(parent, "moved"))
    assert sorted(files.listdir(parent)) == ["moved", "run.txt", "run0", "run_old"]
    assert sorted(files.listdir(files.join(parent, "moved"))) == ["0abc", "a", "sub"]
    assert files.read_text(files.join(parent, "moved/sub/b")) == "run/sub/b"
    files.rmtree(files.join(parent, "moved"))
    files.rmtree(files.join(parent, "never-made"))
    assert sorted(files.listdir(parent)) == ["run.txt", "run0", "run_old"]
    assert [files.read_text(files.join(parent, p)) for p in ("run_old/c", "run.txt", "run0/d")] \
        == ["run_old/c", "run.txt", "run0/d"]


def test_atomic_write_to_a_url_replaces_the_file_and_leaves_no_temporary_file(ram_dir):
    path = files.join(ram_dir, "stats.json")
    atomic_write(path, lambda f: json.dump([{"epoch_num": 1, "global_step": 3}], f))
    atomic_write(path, json.dumps([{"epoch_num": 2, "global_step": 6}]))
    assert read_json_records(path) == [{"epoch_num": 2, "global_step": 6}]

    def fail(f):
        f.write("[{")
        raise RuntimeError("killed while writing")
    with pytest.raises(RuntimeError):
        atomic_write(path, fail)
    assert read_json_records(path) == [{"epoch_num": 2, "global_step": 6}]
    assert files.listdir(ram_dir) == ["stats.json"]


def test_a_url_directory_has_no_lock_and_says_so(ram_dir):
    with pytest.raises(ValueError, match="not on a local disk"):
        DirLock(ram_dir)
    assert is_locked(ram_dir) is False
