"""SVHNDigit on tiny ``.mat`` files in the standard layout."""
import numpy as np
import pytest
from dataflow_support import write_svhn

from tfloop.dataflow import dataset

pytest.importorskip("scipy")


def test_svhn_images_and_labels_with_ten_as_zero(tmp_path):
    made = write_svhn(str(tmp_path))
    train = dataset.SVHNDigit("train", data_dir=str(tmp_path), shuffle=False)
    train.reset_state()
    points = list(train)
    images, labels = made["train"]
    assert len(train) == len(points) == 20
    np.testing.assert_array_equal(points[3][0], images[..., 3])
    assert [p[1] for p in points] == [int(y) % 10 for y in labels[:, 0]]


def test_svhn_missing_file_says_where_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"extra_32x32.mat.*housenumbers"):
        dataset.SVHNDigit("extra", data_dir=str(tmp_path))
    with pytest.raises(ValueError, match="'valid'"):
        dataset.SVHNDigit("valid", data_dir=str(tmp_path))


def test_svhn_per_pixel_mean_of_the_named_splits(tmp_path, monkeypatch):
    made = write_svhn(str(tmp_path / "svhn_data"), seed=1)
    monkeypatch.setenv("TFLOOP_DATASET", str(tmp_path))
    mean = dataset.SVHNDigit.get_per_pixel_mean(("train", "test"))
    both = np.concatenate([made["train"][0], made["test"][0]], axis=3)
    np.testing.assert_allclose(mean, both.mean(axis=3))
