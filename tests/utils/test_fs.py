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
