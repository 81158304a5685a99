"""MNIST and Fashion-MNIST read from standard idx files."""
import gzip
import os

import numpy as np
import pytest
from dataflow_support import write_mnist

from tfloop.dataflow import dataset


def test_reads_images_and_labels_in_order(tmp_path):
    images, labels = write_mnist(str(tmp_path), n_train=12, n_test=5)
    df = dataset.Mnist("train", shuffle=False, dir=str(tmp_path))
    df.reset_state()
    dps = list(df)
    assert len(df) == len(dps) == 12
    img, label = dps[3]
    assert img.shape == (28, 28) and img.dtype == np.float32
    np.testing.assert_allclose(img, images[3] / 255.0, rtol=1e-6)
    assert label == labels[3]
    assert len(dataset.Mnist("test", dir=str(tmp_path))) == 5


def test_shuffles_each_pass(tmp_path):
    write_mnist(str(tmp_path), n_train=30, n_test=1)
    df = dataset.Mnist("train", dir=str(tmp_path))
    df.reset_state()
    first, second = [int(label) for _, label in df], [int(label) for _, label in df]
    assert sorted(first) == sorted(second)
    assert [img.sum() for img, _ in df] != [img.sum() for img, _ in dataset.Mnist(
        "train", shuffle=False, dir=str(tmp_path))]


def test_default_directory_comes_from_the_environment(tmp_path, monkeypatch):
    write_mnist(str(tmp_path / "mnist_data"), n_train=3, n_test=2)
    monkeypatch.setenv("TFLOOP_DATASET", str(tmp_path))
    assert len(dataset.Mnist("test")) == 2
    write_mnist(str(tmp_path / "fashion_mnist_data"), n_train=4, n_test=2)
    fashion = dataset.FashionMnist("train")
    assert len(fashion) == 4 and fashion.get_label_names()[9] == "Ankle boot"


def test_missing_files_say_what_to_download_and_where(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        dataset.Mnist("train", dir=str(tmp_path))
    assert str(info.value) == (
        f"Mnist('train') needs train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz in "
        f"{tmp_path}; missing: train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz. Download "
        "them from https://storage.googleapis.com/cvdf-datasets/mnist/ "
        "(https://storage.googleapis.com/cvdf-datasets/mnist/train-images-idx3-ubyte.gz, "
        "https://storage.googleapis.com/cvdf-datasets/mnist/train-labels-idx1-ubyte.gz) into "
        "that directory, keeping the .gz files as they are. tfloop does not download datasets; "
        "pass dir= to read another directory (or set $TFLOOP_DATASET).")
    with pytest.raises(ValueError, match="takes 'train' or 'test', got 'val'"):
        dataset.Mnist("val", dir=str(tmp_path))


def test_corrupt_files_are_named(tmp_path):
    write_mnist(str(tmp_path), n_train=3, n_test=1)
    with gzip.open(os.path.join(tmp_path, "train-images-idx3-ubyte.gz"), "wb") as f:
        f.write(np.array([1234, 3, 28, 28], ">u4").tobytes())
    with pytest.raises(ValueError, match="magic number 1234, expected 2051"):
        dataset.Mnist("train", dir=str(tmp_path))
    with gzip.open(os.path.join(tmp_path, "train-images-idx3-ubyte.gz"), "wb") as f:
        f.write(np.array([2051, 3, 28, 28], ">u4").tobytes() + b"\0" * 10)
    with pytest.raises(ValueError, match="is truncated"):
        dataset.Mnist("train", dir=str(tmp_path))
