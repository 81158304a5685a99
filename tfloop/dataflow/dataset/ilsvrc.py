"""ILSVRC12 (ImageNet-1k) from a local copy in tensorpack's layout, its metadata files, and
TinyImageNet.

The image directory (``dir``)::

    dir/train/n02134418/n02134418_198.JPEG ...     one folder per synset
    dir/val/ILSVRC2012_val_00000001.JPEG ...       flat ("original"), or one folder per synset
    dir/test/ILSVRC2012_test_00000001.JPEG ...

The metadata directory (``meta_dir``, by default ``$TFLOOP_DATASET/ilsvrc_metadata``) holds the
files of Caffe's ``caffe_ilsvrc12.tar.gz``: ``synsets.txt`` (one synset id per line, line k is
label k), ``synset_words.txt`` (``n01440764 tench, Tinca tinca`` per line) and ``train.txt`` /
``val.txt`` / ``test.txt`` (``<relative image path> <label>`` per line).
"""
import os

from tfloop.dataflow.base import RNGDataFlow
from tfloop.dataflow.dataset._files import ImageFileLabelData, dataset_dir, require_files
from tfloop.utils import logger
from tfloop.utils.optional import require

__all__ = ["ILSVRCMeta", "ILSVRC12", "ILSVRC12Files", "TinyImageNet"]

_SPLITS = ("train", "val", "test")
_STRUCTURES = ("original", "train")
_GET_META = ("Extract caffe_ilsvrc12.tar.gz (http://dl.caffe.berkeleyvision.org/"
             "caffe_ilsvrc12.tar.gz) there.")


def _read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


class ILSVRCMeta:
    """The ILSVRC12 metadata: synsets, their words, and the image lists of each split.

    Args:
        dir (str): the metadata directory (see the module docstring); by default
            ``$TFLOOP_DATASET/ilsvrc_metadata``.

    Raises:
        FileNotFoundError: ``synsets.txt`` is not in ``dir``.

    Example:
        >>> words = ILSVRCMeta("~/meta").get_synset_words_1000()  # doctest: +SKIP
        >>> words[0]  # doctest: +SKIP
        'n01440764 tench, Tinca tinca'
    """

    def __init__(self, dir=None):
        self.dir = dataset_dir("ilsvrc_metadata", dir)
        require_files("ILSVRCMeta", self.dir, ["synsets.txt"], _GET_META)

    def _file(self, name):
        return require_files("ILSVRCMeta", self.dir, [name], _GET_META)[0]

    def get_synset_words_1000(self):
        """``{label: "synset words"}`` from ``synset_words.txt``."""
        return dict(enumerate(_read_lines(self._file("synset_words.txt"))))

    def get_synset_1000(self):
        """``{label: synset id}`` from ``synsets.txt``."""
        return dict(enumerate(_read_lines(self._file("synsets.txt"))))

    def get_image_list(self, name, dir_structure="original"):
        """``[(relative image path, label)]`` of split ``name`` from ``<name>.txt``.

        Args:
            name (str): ``"train"``, ``"val"`` or ``"test"``.
            dir_structure (str): ``"original"`` or ``"train"``; with ``"train"``, the paths of
                ``val`` and ``test`` get their synset folder prepended.
        """
        _check_choice("name", name, _SPLITS)
        _check_choice("dir_structure", dir_structure, _STRUCTURES)
        synsets = self.get_synset_1000() if name != "train" and dir_structure == "train" else None
        path = self._file(f"{name}.txt")
        images = []
        for line in _read_lines(path):
            fname, label = line.split()
            label = int(label)
            images.append((os.path.join(synsets[label], fname) if synsets else fname, label))
        if not images:
            raise ValueError(f"ILSVRCMeta: {path} lists no image.")
        return images

    def get_per_pixel_mean(self, size=None):
        """tensorpack read Caffe's ``imagenet_mean.binaryproto`` here, which needs Caffe's
        protobuf definitions; tfloop does not provide them."""
        raise NotImplementedError(
            "ILSVRCMeta.get_per_pixel_mean needs Caffe's protobuf definitions, which tfloop does "
            "not provide: compute the mean of your training images instead.")

    @staticmethod
    def guess_dir_structure(dir):
        """``"train"`` when ``dir`` holds synset folders (``n…``), else ``"original"``."""
        entries = sorted(os.listdir(dir))
        if not entries:
            raise FileNotFoundError(f"ILSVRC12: {dir} is empty; it should hold the images.")
        first = entries[0]
        structure = "train" if first.startswith("n") and os.path.isdir(
            os.path.join(dir, first)) else "original"
        logger.info(f"[ILSVRC12] Assuming directory {dir} has '{structure}' structure.")
        return structure


def _check_choice(what, value, choices):
    if value not in choices:
        raise ValueError(f"ILSVRC12: {what} must be one of {choices}, got {value!r}.")


class ILSVRC12Files(RNGDataFlow):
    """``[image file path, label]`` of an ILSVRC12 split (see the module docstring's layout).

    Args:
        dir (str): the directory holding ``train/``, ``val/`` and/or ``test/``.
        name (str): ``"train"``, ``"val"`` or ``"test"``.
        meta_dir (str): the metadata directory (:class:`ILSVRCMeta`).
        shuffle (bool): a new order at each pass; by default for ``"train"`` only.
        dir_structure (str): ``"original"`` or ``"train"`` for ``val``/``test``; guessed by
            default (``train`` is always ``"train"``).

    Raises:
        FileNotFoundError: the split's directory, or one of its first images, is missing.

    Example:
        >>> ds = ILSVRC12Files("~/imagenet", "val", shuffle=False)  # doctest: +SKIP
    """

    def __init__(self, dir, name, meta_dir=None, shuffle=None, dir_structure=None):
        _check_choice("name", name, _SPLITS)
        self.full_dir = os.path.join(os.path.expanduser(str(dir)), name)
        if not os.path.isdir(self.full_dir):
            raise FileNotFoundError(
                f"{type(self).__name__}: no directory {self.full_dir}. The layout is "
                f"<dir>/train/<synset>/<image>.JPEG and <dir>/val/<image>.JPEG (or "
                f"<dir>/val/<synset>/<image>.JPEG); tfloop does not download ImageNet.")
        self.name = name
        self.shuffle = name == "train" if shuffle is None else shuffle
        if name == "train":
            dir_structure = "train"
        elif dir_structure is None:
            dir_structure = ILSVRCMeta.guess_dir_structure(self.full_dir)
        self.imglist = ILSVRCMeta(meta_dir).get_image_list(name, dir_structure)
        for fname, _ in self.imglist[:10]:
            path = os.path.join(self.full_dir, fname)
            if not os.path.isfile(path):
                raise FileNotFoundError(f"{type(self).__name__}: {path} (listed in the "
                                        f"metadata's {name}.txt) does not exist.")

    def __len__(self):
        return len(self.imglist)

    def __iter__(self):
        order = self.rng.permutation(len(self.imglist)) if self.shuffle else \
            range(len(self.imglist))
        for k in order:
            fname, label = self.imglist[k]
            yield [os.path.join(self.full_dir, fname), label]


class ILSVRC12(ILSVRC12Files):
    """``[image, label]`` of an ILSVRC12 split: uint8 HxWx3 BGR images and labels in [0, 1000).

    Takes the arguments of :class:`ILSVRC12Files`; decoding needs OpenCV
    (``pip install 'tfloop-train[datasets]'``).

    Example:
        >>> ds = ILSVRC12("~/imagenet", "train")  # doctest: +SKIP
        >>> ds = AugmentImageComponent(ds, augmentors)  # doctest: +SKIP
    """

    def __iter__(self):
        cv2 = require("cv2", "datasets", "ILSVRC12")
        for fname, label in super().__iter__():
            image = cv2.imread(fname, cv2.IMREAD_COLOR)
            if image is None:
                raise ValueError(f"ILSVRC12: cannot decode {fname}.")
            yield [image, label]


_GET_TINY = "Download and unzip http://cs231n.stanford.edu/tiny-imagenet-200.zip."


class TinyImageNet(ImageFileLabelData):
    """``[image, label]`` of TinyImageNet: 64x64x3 uint8 BGR images and labels in [0, 200) (the
    line of the class in ``wnids.txt``).

    ``dir`` is the unzipped ``tiny-imagenet-200``: ``wnids.txt``,
    ``train/<wnid>/images/*.JPEG``, and ``val/val_annotations.txt`` (``<image> <wnid> ...`` per
    line) with ``val/images/*.JPEG``. Reading the images needs OpenCV
    (``pip install 'tfloop-train[datasets]'``).

    Args:
        dir (str): the dataset directory.
        name (str): ``"train"`` or ``"val"``.
        shuffle (bool): a new order at each pass; by default for ``"train"`` only.

    Example:
        >>> ds = TinyImageNet("~/data/tiny-imagenet-200", "train")  # doctest: +SKIP
    """

    def __init__(self, dir, name, shuffle=None):
        if name not in ("train", "val"):
            raise ValueError(f"TinyImageNet: name must be 'train' or 'val', got {name!r}.")
        dir = os.path.expanduser(str(dir))
        wnids = _read_lines(require_files("TinyImageNet", dir, ["wnids.txt"], _GET_TINY)[0])
        self.full_dir = os.path.join(dir, name)
        self.shuffle = name == "train" if shuffle is None else shuffle
        self.imglist = (self._train_list(wnids) if name == "train"
                        else self._val_list({wnid: k for k, wnid in enumerate(wnids)}))

    def _train_list(self, wnids):
        imglist = []
        for label, wnid in enumerate(wnids):
            images = os.path.join(self.full_dir, wnid, "images")
            if not os.path.isdir(images):
                raise FileNotFoundError(f"TinyImageNet: no directory {images}. {_GET_TINY}")
            imglist += [(os.path.join(images, f), label) for f in sorted(os.listdir(images))]
        return imglist

    def _val_list(self, labels):
        annotations, = require_files("TinyImageNet", self.full_dir, ["val_annotations.txt"],
                                     _GET_TINY)
        imglist = []
        for line in _read_lines(annotations):
            image, wnid = line.split()[:2]
            if wnid not in labels:
                raise ValueError(f"TinyImageNet: {annotations} names the class {wnid!r}, which "
                                 f"is not in wnids.txt.")
            imglist.append((os.path.join(self.full_dir, "images", image), labels[wnid]))
        return imglist
