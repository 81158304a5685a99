"""HDF5Serializer and HDF5Data: a DataFlow written to an HDF5 file and read back."""
import numpy as np
import pytest

from tfloop.dataflow import DataFromList, HDF5Data, HDF5Serializer

pytest.importorskip("h5py")


def test_save_and_load_round_trip(tmp_path):
    points = [[np.full((2, 3), k, np.float32), k] for k in range(5)]
    path = str(tmp_path / "data.h5")
    HDF5Serializer.save(DataFromList(points, shuffle=False), path, ["images", "labels"])
    assert [p.name for p in tmp_path.iterdir()] == ["data.h5"]
    df = HDF5Serializer.load(path, ["images", "labels"], shuffle=False)
    df.reset_state()
    assert len(df) == 5
    for (image, label), (expected, k) in zip(df, points):
        np.testing.assert_array_equal(image, expected)
        assert label == k
    shuffled = HDF5Data(path, ["labels"])
    shuffled.reset_state()
    assert sorted(int(dp[0]) for dp in shuffled) == list(range(5))


def test_bad_components_and_paths(tmp_path):
    path = str(tmp_path / "data.h5")
    with pytest.raises(ValueError, match="2 components but data_paths names 1"):
        HDF5Serializer.save(DataFromList([[1, 2]], shuffle=False), path, ["a"])
    assert not list(tmp_path.iterdir())
    HDF5Serializer.save(DataFromList([[1, 2]], shuffle=False), path, ["a", "b"])
    with pytest.raises(KeyError, match=r"no dataset \['c'\]"):
        HDF5Data(path, ["a", "c"])
