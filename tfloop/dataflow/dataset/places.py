"""Places365-Standard, low-resolution images in the "easy directory structure"."""
import os

from tfloop.dataflow.dataset._files import ImageFileLabelData, require_files
from tfloop.utils import logger

__all__ = ["Places365Standard"]

_SPLITS = ("train", "val")


class Places365Standard(ImageFileLabelData):
    """``[image, label]``: 256x256x3 uint8 BGR images and class ids (the class names sorted
    alphabetically, as in Places365's ``categories_places365.txt``).

    ``dir`` holds ``train.txt`` / ``val.txt``, one image path per line relative to ``dir`` whose
    second component is the class (``train/airfield/00000001.jpg``), and the images (the "easy
    directory structure" of http://places2.csail.mit.edu/download.html). Reading the images needs
    OpenCV (``pip install 'tfloop-train[datasets]'``).

    Args:
        dir (str): the dataset directory.
        name (str): ``"train"`` or ``"val"``.
        shuffle (bool): a new order at each pass; by default for ``"train"`` only.

    Example:
        >>> ds = Places365Standard("~/data/places365_standard", "train")  # doctest: +SKIP
    """

    def __init__(self, dir, name, shuffle=None):
        if name not in _SPLITS:
            raise ValueError(f"Places365Standard: name must be one of {_SPLITS}, got {name!r}.")
        dir = os.path.expanduser(str(dir))
        label_file, = require_files("Places365Standard", dir, [f"{name}.txt"],
                                    "Download the easy directory structure of Places365-Standard "
                                    "from http://places2.csail.mit.edu/download.html.")
        self.name = name
        self.shuffle = name == "train" if shuffle is None else shuffle
        files = []
        with open(label_file, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                relative = line.split()[0]
                relative = relative[2:] if relative.startswith("./") else relative.lstrip("/")
                parts = relative.split("/")
                if len(parts) < 3:
                    raise ValueError(f"Places365Standard: {label_file} has {line.strip()!r}; "
                                     f"lines are <split>/<class>/<image>.jpg.")
                files.append((os.path.join(dir, relative), parts[1]))
        self._labels = sorted({label for _, label in files})
        ids = {label: k for k, label in enumerate(self._labels)}
        self.imglist = [(path, ids[label]) for path, label in files]
        logger.info(f"Found {len(self.imglist)} images in {label_file}.")

    def get_label_names(self):
        """The class names, in the order of their ids."""
        return list(self._labels)
