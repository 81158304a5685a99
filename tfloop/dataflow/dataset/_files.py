"""Where datasets live on disk, and the error that says what to download when they are not there.

tfloop never downloads: a dataset reads the standard files from the directory you name (``dir=``),
or from ``$TFLOOP_DATASET/<name>`` (``$TENSORPACK_DATASET`` is honoured too), else
``~/tfloop_data/<name>``. :class:`ImageLabelData` (arrays in memory) and
:class:`ImageFileLabelData` (image files) are the DataFlow parts the datasets share.
"""
import os

from tfloop.dataflow.base import RNGDataFlow
from tfloop.utils.fs import get_dataset_path
from tfloop.utils.optional import require

__all__ = ["dataset_dir", "require_files", "ImageLabelData", "ImageFileLabelData"]


def dataset_dir(subdir, dir=None):
    """The directory a dataset reads from: ``dir`` if given, else the default for ``subdir``."""
    if dir is not None:
        return os.path.abspath(os.path.expanduser(str(dir)))
    return get_dataset_path(subdir)


def require_files(owner, directory, names, how_to_get):
    """The full paths of ``names`` under ``directory``; raise FileNotFoundError listing the
    missing ones and ``how_to_get`` them when any is absent."""
    paths = [os.path.join(directory, name) for name in names]
    missing = [name for name, path in zip(names, paths) if not os.path.isfile(path)]
    if missing:
        raise FileNotFoundError(
            f"{owner} needs {', '.join(names)} in {directory}; missing: {', '.join(missing)}. "
            f"{how_to_get} tfloop does not download datasets; pass dir= to read another "
            "directory (or set $TFLOOP_DATASET).")
    return paths


class ImageLabelData(RNGDataFlow):
    """``[image, label]`` datapoints of the arrays ``self.images`` and ``self.labels`` (set by a
    subclass), in a new random order at every pass when ``self.shuffle``."""

    def __len__(self):
        return len(self.images)

    def __iter__(self):
        order = self.rng.permutation(len(self)) if self.shuffle else range(len(self))
        for k in order:
            yield [self.images[k], self.labels[k]]


class ImageFileLabelData(RNGDataFlow):
    """``[image, label]`` datapoints of ``self.imglist``, ``(image path, label)`` pairs set by a
    subclass: uint8 HxWx3 BGR images read with OpenCV (``pip install 'tfloop-train[datasets]'``),
    in a new random order at every pass when ``self.shuffle``."""

    def __len__(self):
        return len(self.imglist)

    def __iter__(self):
        cv2 = require("cv2", "datasets", type(self).__name__)
        order = self.rng.permutation(len(self)) if self.shuffle else range(len(self))
        for k in order:
            path, label = self.imglist[k]
            image = cv2.imread(path, cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f"{type(self).__name__}: cannot read the image {path}.")
            yield [image, label]
