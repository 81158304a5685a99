"""MNIST and Fashion-MNIST from their standard idx ``.gz`` files."""
import gzip

import numpy as np

from tfloop.dataflow.dataset._files import ImageLabelData, dataset_dir, require_files

__all__ = ["FashionMnist", "Mnist"]

_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
          "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}


def _read_idx(path, magic, dims):
    with gzip.open(path, "rb") as f:
        header = np.frombuffer(f.read(4 * (1 + dims)), dtype=">u4")
        if len(header) != 1 + dims or header[0] != magic:
            found = header[0] if len(header) else "nothing"
            raise ValueError(f"{path} is not an MNIST idx file: magic number {found}, expected "
                             f"{magic}. Re-download it.")
        shape = tuple(int(n) for n in header[1:])
        data = np.frombuffer(f.read(), dtype=np.uint8)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path} is truncated: {data.size} bytes of data for shape {shape}. "
                         "Re-download it.")
    return data.reshape(shape)


class Mnist(ImageLabelData):
    """``[image, label]`` of MNIST: image float32 (28, 28) in [0, 1], label uint8.

    Reads ``train-images-idx3-ubyte.gz`` and ``train-labels-idx1-ubyte.gz`` (or the ``t10k-``
    files for ``'test'``) from ``dir``.

    Example:
        >>> df = Mnist("train", dir="~/data/mnist")  # doctest: +SKIP
    """

    _DIR_NAME = "mnist_data"
    _SOURCE = "https://storage.googleapis.com/cvdf-datasets/mnist/"

    def __init__(self, train_or_test, shuffle=True, dir=None):
        """
        Args:
            train_or_test (str): ``'train'`` or ``'test'``.
            shuffle (bool): shuffle at every pass.
            dir (str): the directory holding the files (see :mod:`..dataset`).
        """
        if train_or_test not in _FILES:
            raise ValueError(f"{type(self).__name__} takes 'train' or 'test', got "
                             f"{train_or_test!r}.")
        self.train_or_test = train_or_test
        self.shuffle = shuffle
        self.dir = dataset_dir(self._DIR_NAME, dir)
        names = _FILES[train_or_test]
        image_path, label_path = require_files(
            f"{type(self).__name__}({train_or_test!r})", self.dir, names,
            f"Download them from {self._SOURCE} ({', '.join(self._SOURCE + n for n in names)}) "
            "into that directory, keeping the .gz files as they are.")
        images = _read_idx(image_path, 2051, 3)
        self.labels = _read_idx(label_path, 2049, 1)
        if len(images) != len(self.labels):
            raise ValueError(f"{image_path} has {len(images)} images but {label_path} has "
                             f"{len(self.labels)} labels.")
        self.images = images.astype(np.float32) / 255.0


class FashionMnist(Mnist):
    """Fashion-MNIST: the same files and datapoints as :class:`Mnist`, of clothes.

    Example:
        >>> df = FashionMnist("test", dir="~/data/fashion_mnist")  # doctest: +SKIP
    """

    _DIR_NAME = "fashion_mnist_data"
    _SOURCE = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"

    def get_label_names(self):
        """The name of each of the 10 classes."""
        return ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                "Sneaker", "Bag", "Ankle boot"]
