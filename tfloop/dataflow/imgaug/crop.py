"""Augmentors that cut out part of the image: fixed, random and Inception-style crops, cutout."""
import numpy as np

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.misc import ResizeShortestEdge, shape2d
from tfloop.dataflow.imgaug.transform import (
    CropTransform,
    PhotometricTransform,
    ResizeTransform,
    TransformList,
)

__all__ = ["RandomCrop", "CenterCrop", "RandomCropRandomShape", "GoogleNetRandomCropAndResize",
           "RandomCutout"]


def _check_fits(owner, img, shape):
    if img.shape[0] < shape[0] or img.shape[1] < shape[1]:
        raise ValueError(f"{owner}: the image of shape {img.shape} is smaller than the crop "
                         f"{shape}; resize it first (e.g. imgaug.ResizeShortestEdge).")


class _FixedSizeCrop(ImageAugmentor):
    """Crop a window of ``crop_shape`` whose top-left corner ``_corner(img)`` chooses."""

    def __init__(self, crop_shape):
        """
        Args:
            crop_shape: ``(h, w)`` or an int.
        """
        self.crop_shape = shape2d(crop_shape, f"{type(self).__name__} crop_shape")
        super().__init__()

    def get_transform(self, img):
        _check_fits(type(self).__name__, img, self.crop_shape)
        return CropTransform(*self._corner(img), *self.crop_shape)


class RandomCrop(_FixedSizeCrop):
    """Crop a window of ``crop_shape`` at a random position.

    Example:
        >>> import numpy as np
        >>> RandomCrop((30, 30)).augment(np.zeros((32, 32, 3), np.uint8)).shape
        (30, 30, 3)
    """

    def _corner(self, img):
        y0 = self.rng.randint(img.shape[0] - self.crop_shape[0] + 1)
        x0 = self.rng.randint(img.shape[1] - self.crop_shape[1] + 1)
        return y0, x0


class CenterCrop(_FixedSizeCrop):
    """Crop a window of ``crop_shape`` at the centre.

    Example:
        >>> import numpy as np
        >>> CenterCrop(2).augment(np.arange(16, dtype=np.uint8).reshape(4, 4)).tolist()
        [[5, 6], [9, 10]]
    """

    def _corner(self, img):
        return int((img.shape[0] - self.crop_shape[0]) * 0.5), \
            int((img.shape[1] - self.crop_shape[1]) * 0.5)


class RandomCropRandomShape(ImageAugmentor):
    """Crop a window of random size (``h`` in ``[hmin, hmax]``, ``w`` in ``[wmin, wmax]``, the
    image size when a max is None) at a random position.

    Example:
        >>> import numpy as np
        >>> out = RandomCropRandomShape(2, 2, 3, 3).augment(np.zeros((5, 5), np.uint8))
        >>> 2 <= out.shape[0] <= 3
        True
    """

    def __init__(self, wmin, hmin, wmax=None, hmax=None, max_aspect_ratio=None):
        """
        Args:
            wmin, hmin, wmax, hmax (int): the range of the window size (inclusive).
            max_aspect_ratio: ignored (kept for tensorpack's signature).
        """
        self.wmin, self.hmin, self.wmax, self.hmax = wmin, hmin, wmax, hmax
        self.max_aspect_ratio = max_aspect_ratio
        super().__init__()

    def get_transform(self, img):
        hmax, wmax = self.hmax or img.shape[0], self.wmax or img.shape[1]
        h = self.rng.randint(self.hmin, hmax + 1)
        w = self.rng.randint(self.wmin, wmax + 1)
        _check_fits("RandomCropRandomShape", img, (h, w))
        y0 = self.rng.randint(img.shape[0] - h + 1)
        x0 = self.rng.randint(img.shape[1] - w + 1)
        return CropTransform(y0, x0, h, w)


class GoogleNetRandomCropAndResize(ImageAugmentor):
    """Inception's crop: a random window of 8-100% of the area with an aspect ratio in 3/4-4/3,
    resized to ``target_shape``; after 10 failed draws, resize the shorter side and crop the
    centre instead.

    Example:
        >>> import numpy as np
        >>> aug = GoogleNetRandomCropAndResize(target_shape=8)
        >>> aug.augment(np.zeros((20, 30, 3), np.uint8)).shape
        (8, 8, 3)
    """

    def __init__(self, crop_area_fraction=(0.08, 1.), aspect_ratio_range=(0.75, 1.333),
                 target_shape=224, interp=_backend.INTER_LINEAR):
        """
        Args:
            crop_area_fraction (tuple): range of the window's share of the image area.
            aspect_ratio_range (tuple): range of the window's width / height.
            target_shape (int): side of the square output.
            interp (int): OpenCV interpolation code.
        """
        self.crop_area_fraction, self.aspect_ratio_range = crop_area_fraction, aspect_ratio_range
        self.target_shape, self.interp = int(target_shape), interp
        super().__init__()

    def get_transform(self, img):
        h, w = img.shape[:2]
        side = self.target_shape
        for _ in range(10):
            area = self.rng.uniform(*self.crop_area_fraction) * h * w
            ratio = self.rng.uniform(*self.aspect_ratio_range)
            ww, hh = int(np.sqrt(area * ratio) + 0.5), int(np.sqrt(area / ratio) + 0.5)
            if self.rng.uniform() < 0.5:
                ww, hh = hh, ww
            if hh <= h and ww <= w:
                x0, y0 = self.rng.randint(0, w - ww + 1), self.rng.randint(0, h - hh + 1)
                return TransformList([CropTransform(y0, x0, hh, ww),
                                      ResizeTransform(hh, ww, side, side, self.interp)])
        resize = ResizeShortestEdge(side, self.interp).get_transform(img)
        y0, x0 = (resize.new_h - side) // 2, (resize.new_w - side) // 2
        return TransformList([resize, CropTransform(y0, x0, side, side)])


class RandomCutout(ImageAugmentor):
    """Cutout: fill a random rectangle with ``fill`` (https://arxiv.org/abs/1708.04552).

    Example:
        >>> import numpy as np
        >>> int((RandomCutout(2, 3).augment(np.ones((5, 5), np.float32)) == 0).sum())
        6
    """

    def __init__(self, h_range, w_range, fill=0.):
        """
        Args:
            h_range (int or tuple): the rectangle's height, or a ``[low, high)`` range.
            w_range (int or tuple): its width, or a range.
            fill (float): the value put in the rectangle.
        """
        self.h_range, self.w_range, self.fill = h_range, w_range, fill
        super().__init__()

    def _draw(self, size):
        return size if isinstance(size, (int, np.integer)) else self.rng.randint(*size)

    def get_transform(self, img):
        h, w = self._draw(self.h_range), self._draw(self.w_range)
        if h > img.shape[0] or w > img.shape[1]:
            raise ValueError(f"RandomCutout: a {h}x{w} rectangle does not fit in an image of "
                             f"shape {img.shape}.")
        y0 = self.rng.randint(0, img.shape[0] - h + 1)
        x0 = self.rng.randint(0, img.shape[1] - w + 1)

        def cut(image):
            image = image.copy()
            image[y0:y0 + h, x0:x0 + w] = self.fill
            return image
        return PhotometricTransform(cut, name="cutout")
