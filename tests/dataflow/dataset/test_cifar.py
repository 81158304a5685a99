"""CIFAR-10 and CIFAR-100 read from the python pickle batches."""
import numpy as np
import pytest
from dataflow_support import write_cifar

from tfloop.dataflow import dataset


def test_cifar10_reads_every_training_batch_in_order(tmp_path):
    images, labels = write_cifar(str(tmp_path), per_batch=4, n_test=3)
    df = dataset.Cifar10("train", shuffle=False, dir=str(tmp_path))
    df.reset_state()
    dps = list(df)
    assert len(df) == len(dps) == 20
    assert all(np.array_equal(img, images[k]) and lab == labels[k]
               for k, (img, lab) in enumerate(dps))
    assert dps[0][0].dtype == np.uint8 and dps[0][0].shape == (32, 32, 3)
    test = dataset.Cifar10("test", dir=str(tmp_path))
    assert len(test) == 3 and test.shuffle is False and df.get_label_names()[2] == "class2"


def test_cifar_means(tmp_path):
    images, _ = write_cifar(str(tmp_path), per_batch=2, n_test=2)
    df = dataset.Cifar10("test", dir=str(tmp_path))
    np.testing.assert_allclose(df.get_per_pixel_mean(("train",)),
                               images.astype(np.float32).mean(axis=0), rtol=1e-5)
    assert df.get_per_channel_mean().shape == (3,)
    with pytest.raises(ValueError, match="'train' and/or 'test', got 'val'"):
        df.get_per_pixel_mean(("val",))


def test_cifar100_fine_labels_and_default_directory(tmp_path, monkeypatch):
    write_cifar(str(tmp_path / "cifar100_data"), classnum=100, per_batch=2, n_test=2)
    monkeypatch.setenv("TFLOOP_DATASET", str(tmp_path))
    df = dataset.Cifar100("train")
    df.reset_state()
    assert len(df) == 10 and df.shuffle is True
    assert all(0 <= lab < 100 for _, lab in df)
    assert len(df.get_label_names()) == 100


def test_missing_files_say_what_to_download(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        dataset.Cifar10("test", dir=str(tmp_path))
    message = str(info.value)
    assert message.startswith(f"Cifar10('test') needs test_batch, batches.meta in "
                              f"{tmp_path}/cifar-10-batches-py; missing: test_batch, batches.meta.")
    assert ("Download https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz and extract it into "
            f"{tmp_path} (`tar xzf cifar-10-python.tar.gz -C {tmp_path}` makes "
            "cifar-10-batches-py/).") in message
    with pytest.raises(ValueError, match="cifar_classnum must be 10 or 100"):
        dataset.CifarBase("train", dir=str(tmp_path), cifar_classnum=20)
