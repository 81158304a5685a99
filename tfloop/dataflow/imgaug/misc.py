"""Augmentors that move pixels: flips, resizing, transposing (tensorpack's ``imgaug.misc``)."""

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import (
    FlipTransform,
    NoOpTransform,
    ResizeTransform,
    TransposeTransform,
)
from tfloop.utils.checks import is_int

__all__ = ["Flip", "Resize", "ResizeShortestEdge", "RandomResize", "Transpose"]


def shape2d(value, owner="shape"):
    """``(h, w)`` from an int or a pair."""
    if is_int(value):
        return int(value), int(value)
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return int(value[0]), int(value[1])
    raise ValueError(f"{owner} must be an int or an (h, w) pair, got {value!r}.")


class Flip(ImageAugmentor):
    """Mirror the image left-right (``horiz=True``) or upside-down (``vert=True``) with
    probability ``prob``.

    Example:
        >>> import numpy as np
        >>> Flip(horiz=True, prob=1.0).augment(np.array([[1, 2]], np.uint8)).tolist()
        [[2, 1]]
    """

    def __init__(self, horiz=False, vert=False, prob=0.5):
        """
        Args:
            horiz (bool): flip left-right.
            vert (bool): flip upside-down.
            prob (float): probability of flipping.
        """
        if horiz == vert:
            raise ValueError("Flip needs exactly one of horiz=True or vert=True; use two Flip "
                             "augmentors to flip both ways.")
        self.horiz, self.vert, self.prob = horiz, vert, prob
        super().__init__()

    def get_transform(self, img):
        if self._rand_range() < self.prob:
            return FlipTransform(img.shape[0], img.shape[1], self.horiz)
        return NoOpTransform()


class Resize(ImageAugmentor):
    """Resize to ``shape``.

    Example:
        >>> import numpy as np
        >>> Resize((4, 6)).augment(np.zeros((2, 2, 3), np.uint8)).shape
        (4, 6, 3)
    """

    def __init__(self, shape, interp=_backend.INTER_LINEAR):
        """
        Args:
            shape: ``(h, w)`` or an int.
            interp (int): OpenCV interpolation code (``cv2.INTER_LINEAR``...).
        """
        self.shape = shape2d(shape, "Resize shape")
        self.interp = interp
        super().__init__()

    def get_transform(self, img):
        return ResizeTransform(img.shape[0], img.shape[1], *self.shape, self.interp)


class ResizeShortestEdge(ImageAugmentor):
    """Resize so that the shorter side is ``size``, keeping the aspect ratio.

    Example:
        >>> import numpy as np
        >>> ResizeShortestEdge(4).augment(np.zeros((2, 3), np.uint8)).shape
        (4, 6)
    """

    def __init__(self, size, interp=_backend.INTER_LINEAR):
        """
        Args:
            size (int): the new length of the shorter side.
            interp (int): OpenCV interpolation code.
        """
        self.size, self.interp = int(size), interp
        super().__init__()

    def get_transform(self, img):
        h, w = img.shape[:2]
        scale = self.size / min(h, w)
        if h < w:
            new_h, new_w = self.size, int(scale * w + 0.5)
        else:
            new_h, new_w = int(scale * h + 0.5), self.size
        return ResizeTransform(h, w, new_h, new_w, self.interp)


class RandomResize(ImageAugmentor):
    """Resize by random factors (floats in ``xrange``/``yrange``) or to random sizes (ints),
    rejecting draws that change the aspect ratio by more than ``aspect_ratio_thres``.

    Example:
        >>> import numpy as np
        >>> out = RandomResize((0.5, 2.0), aspect_ratio_thres=0).augment(np.zeros((4, 4), np.uint8))
        >>> out.shape[0] == out.shape[1]
        True
    """

    def __init__(self, xrange, yrange=None, minimum=(0, 0), aspect_ratio_thres=0.15,
                 interp=_backend.INTER_LINEAR):
        """
        Args:
            xrange (tuple): ``(min, max)`` scale factors (floats) or widths in pixels (ints).
            yrange (tuple): the same for the height; unused when ``aspect_ratio_thres == 0``.
            minimum (tuple): ``(min width, min height)`` in pixels.
            aspect_ratio_thres (float): largest relative change of the aspect ratio; 0 keeps it.
            interp (int): OpenCV interpolation code.
        """
        if aspect_ratio_thres < 0:
            raise ValueError(f"RandomResize: aspect_ratio_thres must be >= 0, got "
                             f"{aspect_ratio_thres}.")
        if aspect_ratio_thres > 0 and yrange is None:
            raise ValueError("RandomResize needs yrange unless aspect_ratio_thres=0 (which keeps "
                             "the aspect ratio).")
        self.xrange, self.yrange, self.minimum = xrange, yrange, minimum
        self.aspect_ratio_thres, self.interp = aspect_ratio_thres, interp
        self._is_scale = any(isinstance(v, float) for v in xrange)
        super().__init__()

    def _draw_size(self, h, w):
        sx = self._rand_range(*self.xrange)
        if self._is_scale:
            sy = sx if self.aspect_ratio_thres == 0 else self._rand_range(*self.yrange)
            new_w, new_h = sx * w, sy * h
        else:
            new_w = sx
            new_h = sx * h / w if self.aspect_ratio_thres == 0 else self._rand_range(*self.yrange)
        return (int(max(new_h, self.minimum[1]) + 0.5), int(max(new_w, self.minimum[0]) + 0.5))

    def get_transform(self, img):
        h, w = img.shape[:2]
        for _ in range(50):
            new_h, new_w = self._draw_size(h, w)
            old_ratio, new_ratio = w / h, new_w / max(new_h, 1)
            if (self.aspect_ratio_thres == 0
                    or abs(new_ratio - old_ratio) / old_ratio < self.aspect_ratio_thres + 1e-5):
                return ResizeTransform(h, w, new_h, new_w, self.interp)
        return NoOpTransform()


class Transpose(ImageAugmentor):
    """Swap height and width with probability ``prob``.

    Example:
        >>> import numpy as np
        >>> Transpose(prob=1.0).augment(np.zeros((2, 3), np.uint8)).shape
        (3, 2)
    """

    def __init__(self, prob=0.5):
        """
        Args:
            prob (float): probability of transposing.
        """
        self.prob = prob
        super().__init__()

    def get_transform(self, img):
        return TransposeTransform() if self.rng.rand() < self.prob else NoOpTransform()
