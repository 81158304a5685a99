"""DataFlows that run image augmentors on components of each datapoint."""
import copy as copy_mod
from contextlib import contextmanager

import numpy as np

from tfloop.dataflow.base import RNGDataFlow
from tfloop.dataflow.common import MapData, MapDataComponent
from tfloop.dataflow.imgaug.base import AugmentorList, check_dtype
from tfloop.utils import logger
from tfloop.utils.coerce import tensorpack_int

__all__ = ["AugmentImageComponent", "AugmentImageComponents", "AugmentImageCoordinates",
           "ImageFromFile"]


def _as_list(augmentors):
    return augmentors if isinstance(augmentors, AugmentorList) else AugmentorList(augmentors)


def _check_coords(coords):
    if not (isinstance(coords, np.ndarray) and coords.ndim == 2 and coords.shape[1] == 2
            and np.issubdtype(coords.dtype, np.floating)):
        raise ValueError("Coordinates must be an (N, 2) floating-point array of (x, y) rows, got "
                         f"{getattr(coords, 'dtype', type(coords).__name__)} of shape "
                         f"{np.shape(coords)}.")


class _ErrorPolicy:
    """Re-raise augmentation errors, or (``catch_exceptions``) drop the datapoint and log."""

    def __init__(self, catch_exceptions):
        self.catch_exceptions = catch_exceptions
        self.count = 0

    @contextmanager
    def catch(self):
        try:
            yield
        except Exception:
            self.count += 1
            if not self.catch_exceptions:
                raise
            if self.count < 10 or self.count % 100 == 0:
                logger.exception(f"Dropped a datapoint whose augmentation failed "
                                 f"({self.count} so far).")


class _Augmenting:
    """The augmentors, copy flag and error policy of the augmenting DataFlows."""

    def _set_augmentation(self, augmentors, copy, catch_exceptions):
        self.augs = _as_list(augmentors)
        self._copy = copy
        self._errors = _ErrorPolicy(catch_exceptions)

    def reset_state(self):
        self.ds.reset_state()
        self.augs.reset_state()


class AugmentImageComponent(_Augmenting, MapDataComponent):
    """Augment the image ``dp[index]`` of every datapoint with a list of augmentors.

    Example:
        >>> from tfloop.dataflow import FakeData, imgaug
        >>> df = AugmentImageComponent(FakeData([[8, 8, 3], [1]], size=2),
        ...                            [imgaug.RandomCrop(6), imgaug.Flip(horiz=True)])
        >>> df.reset_state(); [dp[0].shape for dp in df]
        [(6, 6, 3), (6, 6, 3)]
    """

    def __init__(self, ds, augmentors, index=0, copy=True, catch_exceptions=False):
        """
        Args:
            ds (DataFlow): the input.
            augmentors (list or AugmentorList): applied in order.
            index (int or str): index or key of the image.
            copy (bool): copy the image before augmenting (some augmentors work in place).
            catch_exceptions (bool): drop datapoints whose augmentation fails (logging them)
                instead of raising.
        """
        self._set_augmentation(augmentors, copy, catch_exceptions)
        super().__init__(ds, self._aug_mapper, index)

    def _aug_mapper(self, img):
        check_dtype(img)
        with self._errors.catch():
            return self.augs.augment(copy_mod.deepcopy(img) if self._copy else img)


class AugmentImageCoordinates(_Augmenting, MapData):
    """Augment an image and an ``(N, 2)`` array of its ``(x, y)`` coordinates the same way.

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import DataFromList, imgaug
        >>> dp = [np.zeros((4, 4), np.uint8), np.array([[1.0, 1.0]])]
        >>> df = AugmentImageCoordinates(DataFromList([dp], shuffle=False), [imgaug.CenterCrop(2)])
        >>> df.reset_state(); next(iter(df))[1].tolist()
        [[0.0, 0.0]]
    """

    def __init__(self, ds, augmentors, img_index=0, coords_index=1, copy=True,
                 catch_exceptions=False):
        """
        Args:
            ds (DataFlow): the input.
            augmentors (list or AugmentorList): applied in order.
            img_index (int or str): index or key of the image.
            coords_index (int or str): index or key of the coordinates.
            copy, catch_exceptions: as in :class:`AugmentImageComponent`.
        """
        self._set_augmentation(augmentors, copy, catch_exceptions)
        self._img_index, self._coords_index = img_index, coords_index
        super().__init__(ds, self._aug_mapper)

    def _aug_mapper(self, dp):
        dp = list(dp) if isinstance(dp, tuple) else dp
        with self._errors.catch():
            img, coords = dp[self._img_index], dp[self._coords_index]
            check_dtype(img)
            _check_coords(coords)
            if self._copy:
                img, coords = copy_mod.deepcopy((img, coords))
            tfms = self.augs.get_transform(img)
            dp[self._img_index] = tfms.apply_image(img)
            dp[self._coords_index] = tfms.apply_coords(coords)
            return dp


class AugmentImageComponents(_Augmenting, MapData):
    """Augment several images of a datapoint (and coordinates) with the same random choices,
    drawn from the first image: e.g. an image and its segmentation mask.

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import DataFromList, imgaug
        >>> img = np.arange(16, dtype=np.uint8).reshape(4, 4)
        >>> df = AugmentImageComponents(DataFromList([[img, img.copy()]], shuffle=False),
        ...                             [imgaug.RandomCrop(2)], index=(0, 1))
        >>> df.reset_state(); a, b = next(iter(df)); bool((a == b).all())
        True
    """

    def __init__(self, ds, augmentors, index=(0, 1), coords_index=(), copy=True,
                 catch_exceptions=False):
        """
        Args:
            ds (DataFlow): the input.
            augmentors (list or AugmentorList): applied in order.
            index (tuple): indices or keys of the images; the first decides the random choices.
            coords_index (tuple): indices or keys of coordinate arrays.
            copy, catch_exceptions: as in :class:`AugmentImageComponent`.
        """
        self._set_augmentation(augmentors, copy, catch_exceptions)
        self._index, self._coords_index = tuple(index), tuple(coords_index)
        if not self._index:
            raise ValueError("AugmentImageComponents needs at least one image index.")
        super().__init__(ds, self._aug_mapper)

    def _aug_mapper(self, dp):
        dp = list(dp) if isinstance(dp, tuple) else copy_mod.copy(dp)
        maybe_copy = copy_mod.deepcopy if self._copy else (lambda x: x)
        with self._errors.catch():
            first = maybe_copy(dp[self._index[0]])
            check_dtype(first)
            tfms = self.augs.get_transform(first)
            dp[self._index[0]] = tfms.apply_image(first)
            for idx in self._index[1:]:
                check_dtype(dp[idx])
                dp[idx] = tfms.apply_image(maybe_copy(dp[idx]))
            for idx in self._coords_index:
                _check_coords(dp[idx])
                dp[idx] = tfms.apply_coords(maybe_copy(dp[idx]))
            return dp


class ImageFromFile(RNGDataFlow):
    """Datapoints ``[image]`` read from image files with OpenCV: ``uint8`` of shape ``(h, w, 3)``
    (BGR) or ``(h, w, 1)`` for ``channel=1``.

    Args:
        files (list[str]): the image paths.
        channel (int): 3 (color) or 1 (grayscale).
        resize (tuple[int, int]): resize every image to ``(h, w)``.
        shuffle (bool): a new random order at every pass.

    Example:
        >>> df = ImageFromFile(glob.glob("images/*.jpg"), resize=(224, 224))  # doctest: +SKIP
    """

    def __init__(self, files, channel=3, resize=None, shuffle=False):
        super().__init__()
        files = list(files)
        if not files:
            raise ValueError("ImageFromFile: no files given.")
        channel = tensorpack_int(channel, "ImageFromFile: channel")
        if channel not in (1, 3):
            raise ValueError(f"ImageFromFile: channel must be 1 or 3, got {channel!r}.")
        self.files = files
        self.channel = channel
        self.resize = tuple(resize) if resize is not None else None
        self.shuffle = bool(shuffle)

    def __len__(self):
        return len(self.files)

    def __iter__(self):
        import cv2
        mode = cv2.IMREAD_GRAYSCALE if self.channel == 1 else cv2.IMREAD_COLOR
        order = list(self.files)
        if self.shuffle:
            self.rng.shuffle(order)
        for path in order:
            image = cv2.imread(path, mode)
            if image is None:
                raise OSError(f"ImageFromFile: cannot read an image from {path!r}.")
            if self.resize is not None:
                image = cv2.resize(image, self.resize[::-1])
            if self.channel == 1:
                image = image[:, :, np.newaxis]
            yield [image]
