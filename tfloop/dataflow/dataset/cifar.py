"""CIFAR-10 and CIFAR-100 from the "python version" pickle batches."""
import os
import pickle

import numpy as np

from tfloop.dataflow.dataset._files import ImageLabelData, dataset_dir, require_files

__all__ = ["Cifar10", "Cifar100", "CifarBase"]

_LAYOUT = {
    10: dict(folder="cifar-10-batches-py", meta="batches.meta", labels="labels",
             names="label_names", train=[f"data_batch_{i}" for i in range(1, 6)],
             test=["test_batch"], url="https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"),
    100: dict(folder="cifar-100-python", meta="meta", labels="fine_labels",
              names="fine_label_names", train=["train"], test=["test"],
              url="https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"),
}


def _load_pickle(path):
    with open(path, "rb") as f:
        obj = pickle.load(f, encoding="bytes")
    return {(k.decode() if isinstance(k, bytes) else k): v for k, v in obj.items()}


def _read_batches(paths, label_key):
    images, labels = [], []
    for path in paths:
        batch = _load_pickle(path)
        data = np.asarray(batch["data"], dtype=np.uint8)
        images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        labels.extend(int(v) for v in batch[label_key])
    return np.concatenate(images), labels


class CifarBase(ImageLabelData):
    """``[image, label]`` of CIFAR: image uint8 (32, 32, 3) in [0, 255] (RGB), label an int.

    Example:
        >>> df = CifarBase("test", dir="~/data/cifar10", cifar_classnum=10)  # doctest: +SKIP
    """

    def __init__(self, train_or_test, shuffle=None, dir=None, cifar_classnum=10):
        """
        Args:
            train_or_test (str): ``'train'`` or ``'test'``.
            shuffle (bool): shuffle at every pass; by default only the training set.
            dir (str): the directory that holds the extracted folder (``cifar-10-batches-py``
                or ``cifar-100-python``).
            cifar_classnum (int): 10 or 100.
        """
        if train_or_test not in ("train", "test"):
            raise ValueError(f"{type(self).__name__} takes 'train' or 'test', got "
                             f"{train_or_test!r}.")
        if cifar_classnum not in _LAYOUT:
            raise ValueError(f"cifar_classnum must be 10 or 100, got {cifar_classnum!r}.")
        layout = _LAYOUT[cifar_classnum]
        self.cifar_classnum = cifar_classnum
        self.train_or_test = train_or_test
        self.dir = dataset_dir(f"cifar{cifar_classnum}_data", dir)
        folder = os.path.join(self.dir, layout["folder"])
        names = layout[train_or_test] + [layout["meta"]]
        paths = require_files(
            f"{type(self).__name__}({train_or_test!r})", folder, names,
            f"Download {layout['url']} and extract it into {self.dir} (`tar xzf "
            f"{os.path.basename(layout['url'])} -C {self.dir}` makes {layout['folder']}/).")
        self._folder, self._layout = folder, layout
        self.images, self.labels = _read_batches(paths[:-1], layout["labels"])
        self._label_names = [n.decode() if isinstance(n, bytes) else n
                             for n in _load_pickle(paths[-1])[layout["names"]]]
        self.shuffle = train_or_test == "train" if shuffle is None else shuffle

    def get_per_pixel_mean(self, names=("train", "test")):
        """The mean (32, 32, 3) float32 image over the named splits."""
        paths = []
        for name in names:
            if name not in ("train", "test"):
                raise ValueError(f"get_per_pixel_mean takes 'train' and/or 'test', got {name!r}.")
            paths.extend(require_files(type(self).__name__, self._folder, self._layout[name],
                                       f"Download {self._layout['url']}."))
        images, _ = _read_batches(paths, self._layout["labels"])
        return images.astype(np.float32).mean(axis=0)

    def get_per_channel_mean(self, names=("train", "test")):
        """The mean of each of the 3 channels over the named splits."""
        return np.mean(self.get_per_pixel_mean(names), axis=(0, 1))

    def get_label_names(self):
        """The name of each class."""
        return self._label_names


class Cifar10(CifarBase):
    """CIFAR-10: ``[image, label]``, image uint8 (32, 32, 3), label in 0..9.

    Reads ``cifar-10-batches-py/`` (``data_batch_1``..``5``, ``test_batch``, ``batches.meta``)
    under ``dir``.

    Example:
        >>> df = Cifar10("train", dir="~/data/cifar10")  # doctest: +SKIP
    """

    def __init__(self, train_or_test, shuffle=None, dir=None):
        super().__init__(train_or_test, shuffle, dir, 10)


class Cifar100(CifarBase):
    """CIFAR-100 (fine labels): reads ``cifar-100-python/`` (``train``, ``test``, ``meta``).

    Example:
        >>> df = Cifar100("test", dir="~/data/cifar100")  # doctest: +SKIP
    """

    def __init__(self, train_or_test, shuffle=None, dir=None):
        super().__init__(train_or_test, shuffle, dir, 100)
