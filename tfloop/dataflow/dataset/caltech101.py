"""Caltech 101 Silhouettes (28x28) from the standard ``caltech101_silhouettes_28_split1.mat``."""
import numpy as np

from tfloop.dataflow.dataset._files import ImageLabelData, dataset_dir, require_files
from tfloop.utils.optional import require

__all__ = ["Caltech101Silhouettes"]

_FILE = "caltech101_silhouettes_28_split1.mat"
_SPLITS = {"train": "train", "test": "test", "val": "val"}


class Caltech101Silhouettes(ImageLabelData):
    """``[image, label]``: 28x28 float images in [0, 1] and labels in [0, 100] (the file's
    1-based classes minus one).

    Args:
        name (str): ``"train"``, ``"test"`` or ``"val"``.
        shuffle (bool): a new order at each pass.
        dir (str): the directory of ``caltech101_silhouettes_28_split1.mat`` (from
            https://people.cs.umass.edu/~marlin/data/); by default
            ``$TFLOOP_DATASET/caltech101_data``.

    Reading the ``.mat`` file needs scipy (``pip install 'tfloop-train[datasets]'``).

    Example:
        >>> train = BatchData(Caltech101Silhouettes("train"), 64)  # doctest: +SKIP
    """

    def __init__(self, name, shuffle=True, dir=None):
        if name not in _SPLITS:
            raise ValueError(f"Caltech101Silhouettes: name must be one of {tuple(_SPLITS)}, got "
                             f"{name!r}.")
        self.name, self.shuffle = name, shuffle
        path, = require_files("Caltech101Silhouettes", dataset_dir("caltech101_data", dir),
                              [_FILE], "Download it from https://people.cs.umass.edu/~marlin/data/.")
        data = require("scipy.io", "datasets", "Caltech101Silhouettes").loadmat(path)
        self.images = np.asarray(data[f"{name}_data"]).reshape((-1, 28, 28))
        self.labels = np.asarray(data[f"{name}_labels"]).ravel() - 1
