"""atomic_write: the old file or the complete new one, never a partial file."""
import os

import pytest

from tfloop.utils.fs import atomic_write


def test_atomic_write_replaces_the_file_and_leaves_no_temp_file(tmp_path):
    path = str(tmp_path / "data.txt")
    atomic_write(path, lambda f: f.write("first"))
    atomic_write(path, lambda f: f.write("second"))
    with open(path) as f:
        assert f.read() == "second"
    assert os.listdir(str(tmp_path)) == ["data.txt"]
    assert oct(os.stat(path).st_mode & 0o777) != oct(0o600)


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = str(tmp_path / "data.txt")
    atomic_write(path, lambda f: f.write("complete"))

    def write_half_then_fail(f):
        f.write("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, write_half_then_fail)
    with open(path) as f:
        assert f.read() == "complete"
    assert os.listdir(str(tmp_path)) == ["data.txt"]


def test_atomic_write_of_bytes(tmp_path):
    path = str(tmp_path / "data.bin")
    atomic_write(path, b"\x00\x01")
    with open(path, "rb") as f:
        assert f.read() == b"\x00\x01"


def test_tensorpack_file_helpers(tmp_path, monkeypatch):
    from tfloop.utils.fs import download, get_dataset_path, mkdir_p, recursive_walk
    mkdir_p(str(tmp_path / "a" / "b"))
    mkdir_p(str(tmp_path / "a" / "b"))
    (tmp_path / "a" / "b" / "f.txt").write_text("hello")
    (tmp_path / "a" / "g.txt").write_text("x")
    assert sorted(os.path.relpath(p, tmp_path) for p in recursive_walk(str(tmp_path / "a"))) == \
        [os.path.join("a", "b", "f.txt"), os.path.join("a", "g.txt")]
    source = (tmp_path / "a" / "b" / "f.txt").as_uri()
    path = download(source, str(tmp_path / "out"))
    assert path == str(tmp_path / "out" / "f.txt") and open(path).read() == "hello"
    with pytest.raises(OSError, match="gave 5 bytes, expected 6"):
        download(source, str(tmp_path / "out2"), expect_size=6)
    assert not os.listdir(tmp_path / "out2")
    monkeypatch.setenv("TFLOOP_DATASET", str(tmp_path / "data"))
    assert get_dataset_path("svhn_data", "x.mat") == str(tmp_path / "data" / "svhn_data" / "x.mat")
