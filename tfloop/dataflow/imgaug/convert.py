"""Augmentors that convert an image's type or colour space."""
import numpy as np

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import PhotometricAugmentor

__all__ = ["ColorSpace", "ToUint8", "ToFloat32", "Grayscale"]


class ColorSpace(PhotometricAugmentor):
    """Convert the image with OpenCV's ``cv2.cvtColor`` and a conversion code (e.g.
    ``cv2.COLOR_BGR2HSV``); with ``keepdims`` a conversion that drops the channel axis (to grey)
    keeps it, of size 1. Needs OpenCV.

    Example:
        >>> import cv2, numpy as np
        >>> ColorSpace(cv2.COLOR_BGR2GRAY).augment(np.zeros((2, 2, 3), np.uint8)).shape
        (2, 2, 1)
    """

    def __init__(self, mode, keepdims=True):
        """
        Args:
            mode (int): an OpenCV colour conversion code.
            keepdims (bool): keep the number of dimensions of the input.
        """
        _backend.require_cv2("imgaug.ColorSpace")
        if not isinstance(mode, int):
            raise TypeError(f"ColorSpace: mode must be an OpenCV conversion code such as "
                            f"cv2.COLOR_BGR2HSV, got {mode!r}.")
        self.mode, self.keepdims = mode, keepdims
        super().__init__()

    def _augment(self, img, _):
        out = _backend.require_cv2("imgaug.ColorSpace").cvtColor(img, self.mode)
        if self.keepdims and out.ndim < img.ndim:
            out = out[..., np.newaxis]
        return out


class ToUint8(PhotometricAugmentor):
    """Clip to [0, 255] and convert to uint8 (smaller datapoints to send between processes).

    Example:
        >>> import numpy as np
        >>> ToUint8().augment(np.array([-3.0, 300.0])).tolist()
        [0, 255]
    """

    def _augment(self, img, _):
        return np.clip(img, 0, 255).astype(np.uint8)


class ToFloat32(PhotometricAugmentor):
    """Convert to float32.

    Example:
        >>> import numpy as np
        >>> ToFloat32().augment(np.zeros(1, np.uint8)).dtype
        dtype('float32')
    """

    def _augment(self, img, _):
        return img.astype(np.float32)


class Grayscale(PhotometricAugmentor):
    """Convert a BGR (or RGB) image to grey: ``(h, w, 1)``, ``(h, w)``, or ``(h, w, 3)`` with
    ``keepshape``.

    Example:
        >>> import numpy as np
        >>> Grayscale(rgb=True).augment(np.zeros((2, 2, 3), np.uint8)).shape
        (2, 2, 1)
    """

    def __init__(self, keepdims=True, rgb=False, keepshape=False):
        """
        Args:
            keepdims (bool): return ``(h, w, 1)`` instead of ``(h, w)``.
            rgb (bool): the input is RGB (else BGR).
            keepshape (bool): repeat the grey image into 3 channels.
        """
        if keepshape and not keepdims:
            raise ValueError("Grayscale: keepshape=True needs keepdims=True.")
        self.keepdims, self.rgb, self.keepshape = keepdims, rgb, keepshape
        super().__init__()

    def _augment(self, img, _):
        grey = _backend.to_gray(img, self.rgb)
        grey = np.clip(np.rint(grey), 0, 255) if img.dtype == np.uint8 else grey
        grey = grey.astype(img.dtype)
        if self.keepshape:
            return np.repeat(grey[:, :, np.newaxis], 3, axis=2)
        return grey[:, :, np.newaxis] if self.keepdims else grey
