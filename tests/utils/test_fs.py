"""atomic_write: the old file or the complete new one, never a partial file; reading stats records
whose last one was cut short."""
import os

import pytest

from tfloop.utils.fs import atomic_write, load_json_records, read_json_records


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


@pytest.mark.parametrize("text, records", [
    ('[\n{"epoch_num": 1}\n,{"epoch_num": 2}\n]\n', [1, 2]),
    ('[\n{"epoch_num": 1}\n,{"epoch_num": 2}\n\n\n\n]\n', [1, 2]),     # the reserve, mid-run
    ('[\n{"epoch_num": 1}\n,{"epoch_num": 2, "co\n\n\n]\n', [1]),      # a record cut short
    ('[\n{"epoch_num": 1}\n,{"epoch_num": 2, "co', [1]),                # and the file with it
    ('[\n{"epoch_num": 1, "co', []),
])
def test_json_records_before_a_last_record_cut_short_are_read(tmp_path, text, records):
    path = tmp_path / "stats.json"
    path.write_text(text)
    assert [r["epoch_num"] for r in read_json_records(str(path))] == records
    assert load_json_records(str(path))[1] == ('"co' in text)


@pytest.mark.parametrize("text", [
    '[{"epoch_num": 1, "co',                            # not a record on a line of its own
    '[\n{"epoch_num": 1}\n,{"epoch_num": 2, \n"co\n]',  # broken over lines
    '[\n{"epoch_num": 1}\n,xyz\n,{"epoch_num": 3}\n]',  # broken in the middle
    '[\n{"epoch_num": 1}\n]\n{"epoch_num": 2}',         # text after the list
])
def test_json_records_broken_elsewhere_are_an_error(tmp_path, text):
    path = tmp_path / "stats.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="is not valid JSON"):
        read_json_records(str(path))
