"""The data pipelines of tensorpack's examples/basics/mnist-convnet.py and cifar-convnet.py,
written with the same calls and only the imports changed, on tiny stand-in files in the standard
formats (found through $TFLOOP_DATASET, as the scripts name no directory)."""
import numpy as np
import pytest
from dataflow_support import write_cifar, write_mnist

from tfloop import *  # noqa: F403  (the scripts' `from tensorpack import *`)
from tfloop.dataflow import dataset


def mnist_get_data():
    train = BatchData(dataset.Mnist("train"), 128)  # noqa: F405
    test = BatchData(dataset.Mnist("test"), 256, remainder=True)  # noqa: F405
    train = PrintData(train)  # noqa: F405
    return train, test


def cifar_get_data(train_or_test, cifar_classnum):
    is_train = train_or_test == "train"
    if cifar_classnum == 10:
        ds = dataset.Cifar10(train_or_test)
    else:
        ds = dataset.Cifar100(train_or_test)
    if is_train:
        augmentors = [
            imgaug.RandomCrop((30, 30)),  # noqa: F405
            imgaug.Flip(horiz=True),  # noqa: F405
            imgaug.Brightness(63),  # noqa: F405
            imgaug.Contrast((0.2, 1.8)),  # noqa: F405
            imgaug.MeanVarianceNormalize(all_channel=True),  # noqa: F405
        ]
    else:
        augmentors = [
            imgaug.CenterCrop((30, 30)),  # noqa: F405
            imgaug.MeanVarianceNormalize(all_channel=True),  # noqa: F405
        ]
    ds = AugmentImageComponent(ds, augmentors)  # noqa: F405
    ds = BatchData(ds, 128, remainder=not is_train)  # noqa: F405
    if is_train:
        ds = MultiProcessRunnerZMQ(ds, 5)  # noqa: F405
    return ds


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TFLOOP_DATASET", str(tmp_path))
    return tmp_path


def test_mnist_convnet_data(data_root, log_lines):
    write_mnist(str(data_root / "mnist_data"), n_train=300, n_test=260)
    train, test = mnist_get_data()
    train.reset_state()
    test.reset_state()
    batches = list(train)
    assert len(train) == len(batches) == 2
    images, labels = batches[0]
    assert images.shape == (128, 28, 28) and images.dtype == np.float32
    assert labels.shape == (128,) and 0 <= images.min() and images.max() <= 1
    assert [b[0].shape[0] for b in test] == [256, 4]
    assert log_lines[0] == "Contents of DataFlow:"
    assert log_lines[1].splitlines()[1] == "  0: ndarray:float32 of shape (128, 28, 28) in range " \
        f"[{images.min()}, {images.max()}]"


@pytest.mark.parametrize("classnum", [10, pytest.param(100, marks=pytest.mark.slow)])
def test_cifar_convnet_data(data_root, classnum):
    write_cifar(str(data_root / f"cifar{classnum}_data"), classnum=classnum, per_batch=30,
                n_test=40)
    train, test = cifar_get_data("train", classnum), cifar_get_data("test", classnum)
    train.reset_state()
    test.reset_state()
    try:
        assert len(train) == 1
        for _ in range(3):  # passes of one batch each, from 5 worker processes
            (images, labels), = list(train)
            assert images.shape == (128, 30, 30, 3) and images.dtype == np.float32
            assert labels.shape == (128,) and labels.max() < classnum
            assert np.allclose(images.mean(axis=(1, 2, 3)), 0, atol=1e-4)
        test_batches = list(test)
        assert [b[0].shape for b in test_batches] == [(40, 30, 30, 3)]
    finally:
        train.close()
