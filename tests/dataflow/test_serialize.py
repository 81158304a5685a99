"""Saving DataFlows to LMDB, npz and TFRecord files and reading them back."""
import sys

import numpy as np
import pytest

from tfloop.dataflow import (
    DataFromList,
    LMDBData,
    LMDBSerializer,
    NumpySerializer,
    TFRecordSerializer,
)


def source(n=7):
    return DataFromList([[np.full((2, 2), i, np.float32), i, f"s{i}"] for i in range(n)],
                        shuffle=False)


def assert_same(datapoints, n=7):
    assert len(datapoints) == n
    for i, dp in enumerate(sorted(datapoints, key=lambda dp: dp[1])):
        assert np.array_equal(dp[0], np.full((2, 2), i, np.float32)) and dp[1:] == [i, f"s{i}"]


def test_lmdb_missing_names_the_packages_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "lmdb", None)  # what `import lmdb` sees when it is missing
    with pytest.raises(ImportError) as error:
        LMDBSerializer.save(source(), str(tmp_path / "data.lmdb"))
    assert str(error.value) == ("LMDBSerializer needs the lmdb package: `pip install lmdb` (or "
                                "`pip install 'tfloop-train[dataflow]'`).")
    assert not (tmp_path / "data.lmdb").exists()


def test_lmdb_round_trip_as_a_file_and_in_a_directory(tmp_path):
    path = str(tmp_path / "data.lmdb")
    LMDBSerializer.save(source(), path, write_frequency=3)
    ordered = LMDBSerializer.load(path, shuffle=False)
    ordered.reset_state()
    assert len(ordered) == 7
    assert [dp[1] for dp in ordered] == list(range(7))
    shuffled = LMDBSerializer.load(path, shuffle=True)
    shuffled.reset_state()
    datapoints = list(shuffled)
    assert_same(datapoints)
    folder = tmp_path / "db"
    folder.mkdir()
    LMDBSerializer.save(source(), str(folder))
    assert (folder / "data.mdb").exists()
    from_folder = LMDBSerializer.load(str(folder), shuffle=False)
    with pytest.raises(RuntimeError, match="reset_state"):
        list(from_folder)
    from_folder.reset_state()
    assert_same(list(from_folder))


def test_lmdb_refuses_to_overwrite_and_to_read_nothing(tmp_path):
    path = str(tmp_path / "data.lmdb")
    LMDBSerializer.save(source(), path)
    with pytest.raises(FileExistsError, match="is never overwritten"):
        LMDBSerializer.save(source(), path)
    with pytest.raises(FileNotFoundError, match="no LMDB database"):
        LMDBData(str(tmp_path / "missing.lmdb"))
    with pytest.raises(TypeError, match="needs a DataFlow"):
        LMDBSerializer.save([[1]], str(tmp_path / "x.lmdb"))


def test_lmdb_data_gives_raw_key_value_pairs(tmp_path):
    path = str(tmp_path / "data.lmdb")
    LMDBSerializer.save(source(3), path)
    df = LMDBData(path, shuffle=False)
    df.reset_state()
    keys = [dp[0] for dp in df]
    assert keys == [b"00000000", b"00000001", b"00000002"]


def test_numpy_round_trip(tmp_path):
    path = str(tmp_path / "data.npz")
    NumpySerializer.save(source(), path)
    df = NumpySerializer.load(path, shuffle=False)
    assert [dp[1] for dp in df] == list(range(7))
    assert_same(list(df))


@pytest.mark.slow  # TensorFlow loads its record writer on first use
def test_tfrecord_round_trip_with_and_without_size(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    TFRecordSerializer.save(source(), path)
    df = TFRecordSerializer.load(path)
    df.reset_state()
    assert_same(list(df))
    sized = TFRecordSerializer.load(path, size=7)
    sized.reset_state()
    assert len(sized) == 7
    assert_same(list(sized))
    with pytest.raises(FileNotFoundError, match="no file"):
        TFRecordSerializer.load(str(tmp_path / "missing.tfrecord"))
    with open(path, "r+b") as f:
        f.truncate(f.seek(0, 2) - 3)
    with pytest.raises(ValueError, match="is truncated: a record of .* bytes is cut short"):
        list(TFRecordSerializer.load(path))
