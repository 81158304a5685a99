"""SVHN cropped digits from the standard ``{train,test,extra}_32x32.mat`` files."""
import os

import numpy as np

from tfloop.dataflow.dataset._files import ImageLabelData, dataset_dir, require_files
from tfloop.utils import logger
from tfloop.utils.optional import require

__all__ = ["SVHNDigit"]

_SPLITS = ("train", "test", "extra")


class SVHNDigit(ImageLabelData):
    """``[image, label]``: 32x32x3 uint8 images in [0, 255] and labels 0-9 (the files' 10 is 0).

    Args:
        name (str): ``"train"``, ``"test"`` or ``"extra"``.
        data_dir (str): the directory of ``<name>_32x32.mat`` (from
            http://ufldl.stanford.edu/housenumbers/); by default ``$TFLOOP_DATASET/svhn_data``.
        shuffle (bool): a new order at each pass.

    Reading the ``.mat`` files needs scipy (``pip install 'tfloop-train[datasets]'``); each split is
    read once per process.

    Example:
        >>> train = BatchData(SVHNDigit("train"), 128)  # doctest: +SKIP
    """

    _cache = {}

    def __init__(self, name, data_dir=None, shuffle=True):
        if name not in _SPLITS:
            raise ValueError(f"SVHNDigit: name must be one of {_SPLITS}, got {name!r}.")
        self.shuffle = shuffle
        directory = dataset_dir("svhn_data", data_dir)
        path, = require_files("SVHNDigit", directory, [f"{name}_32x32.mat"],
                              "Download it from http://ufldl.stanford.edu/housenumbers/.")
        key = os.path.realpath(path)
        if key not in SVHNDigit._cache:
            logger.info(f"Loading {path} ...")
            data = require("scipy.io", "datasets", "SVHNDigit").loadmat(path)
            labels = data["y"].reshape(-1).copy()
            labels[labels == 10] = 0
            SVHNDigit._cache[key] = (data["X"].transpose(3, 0, 1, 2), labels)
        self.images, self.labels = SVHNDigit._cache[key]
        self.X, self.Y = self.images, self.labels  # tensorpack's attribute names

    @staticmethod
    def get_per_pixel_mean(names=("train", "test", "extra")):
        """The 32x32x3 mean image of the named splits (float64)."""
        return np.concatenate([SVHNDigit(n).images for n in names]).mean(axis=0)
