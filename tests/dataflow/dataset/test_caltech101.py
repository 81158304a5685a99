"""Caltech101Silhouettes on a tiny .mat file in the standard layout."""
import numpy as np
import pytest

from tfloop.dataflow import dataset

pytest.importorskip("scipy")

FILE = "caltech101_silhouettes_28_split1.mat"


def _write(directory, seed=0):
    import scipy.io
    rng = np.random.RandomState(seed)
    made = {}
    for name, n in (("train", 6), ("test", 4), ("val", 3)):
        images = (rng.rand(n, 28 * 28) > 0.5).astype(np.float64)
        labels = rng.randint(1, 102, (n, 1))
        made[f"{name}_data"], made[f"{name}_labels"] = images, labels
    scipy.io.savemat(str(directory / FILE), made)
    return made


def test_caltech101_images_and_zero_based_labels(tmp_path):
    made = _write(tmp_path)
    for name, n in (("train", 6), ("test", 4), ("val", 3)):
        df = dataset.Caltech101Silhouettes(name, shuffle=False, dir=str(tmp_path))
        df.reset_state()
        points = list(df)
        assert len(df) == len(points) == n
        np.testing.assert_array_equal(points[1][0], made[f"{name}_data"][1].reshape(28, 28))
        assert [p[1] for p in points] == list(made[f"{name}_labels"].ravel() - 1)


def test_caltech101_default_directory_and_missing_file(tmp_path, monkeypatch):
    (tmp_path / "caltech101_data").mkdir()
    _write(tmp_path / "caltech101_data", seed=1)
    monkeypatch.setenv("TFLOOP_DATASET", str(tmp_path))
    assert len(dataset.Caltech101Silhouettes("val")) == 3
    with pytest.raises(FileNotFoundError, match=FILE + r".*people.cs.umass.edu/~marlin/data"):
        dataset.Caltech101Silhouettes("train", dir=str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="'valid'"):
        dataset.Caltech101Silhouettes("valid", dir=str(tmp_path))
