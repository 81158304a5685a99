"""Augmentors that warp the image: rotation about a random centre, rotation and crop."""
import math

import numpy as np

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import CropTransform, TransformList, WarpAffineTransform

__all__ = ["Rotation", "RotationAndCropValid"]


class Rotation(ImageAugmentor):
    """Rotate by a random angle in ``[-max_deg, max_deg]`` about a random centre (a fraction in
    ``center_range`` of the width and height). The image keeps its size; uncovered pixels are
    filled by ``border`` (replicated edge by default, or ``border_value``).

    Example:
        >>> import numpy as np
        >>> Rotation(30).augment(np.zeros((8, 10, 3), np.uint8)).shape
        (8, 10, 3)
    """

    def __init__(self, max_deg, center_range=(0, 1), interp=_backend.INTER_LINEAR,
                 border=_backend.BORDER_REPLICATE, step_deg=None, border_value=0):
        """
        Args:
            max_deg (float): largest absolute angle, in degrees.
            center_range (tuple): range of the centre, as fractions of the image size.
            interp (int): OpenCV interpolation code (linear or nearest without OpenCV).
            border (int): OpenCV border mode: ``BORDER_REPLICATE`` (1) or ``BORDER_CONSTANT`` (0).
            step_deg (float): make the angle a multiple of this (needs ``max_deg=180`` and a
                divisor of 180).
            border_value: the fill value with ``BORDER_CONSTANT``.
        """
        if step_deg is not None and (max_deg != 180 or 180 % step_deg != 0):
            raise ValueError(f"Rotation(step_deg={step_deg}) needs max_deg=180 and a step that "
                             f"divides 180, got max_deg={max_deg}.")
        self.max_deg, self.center_range, self.interp = max_deg, center_range, interp
        self.border, self.step_deg, self.border_value = border, step_deg, border_value
        super().__init__()

    def get_transform(self, img):
        size = np.array(img.shape[1::-1], dtype=np.float64)
        center = size * self.rng.uniform(self.center_range[0], self.center_range[1], 2)
        deg = float(self.rng.uniform(-self.max_deg, self.max_deg))
        if self.step_deg:
            deg = deg // self.step_deg * self.step_deg
        # pixel centres sit at half-integers: the centre of rotation is shifted by half a pixel
        mat = _backend.rotation_matrix(tuple(center - 0.5), deg)
        return WarpAffineTransform(mat, img.shape[1::-1], interp=self.interp,
                                   borderMode=self.border, borderValue=self.border_value)


class RotationAndCropValid(ImageAugmentor):
    """Rotate about the image centre by a random angle in ``[-max_deg, max_deg]``, then crop the
    largest axis-aligned rectangle holding no pixel from outside the image (so the output's
    size depends on the angle).

    Example:
        >>> import numpy as np
        >>> out = RotationAndCropValid(20).augment(np.zeros((40, 60, 3), np.uint8))
        >>> out.shape[0] <= 40 and out.shape[1] <= 60
        True
    """

    def __init__(self, max_deg, interp=_backend.INTER_LINEAR, step_deg=None):
        """
        Args:
            max_deg (float): largest absolute angle, in degrees.
            interp (int): OpenCV interpolation code.
            step_deg (float): make the angle a multiple of this (needs ``max_deg=180`` and a
                divisor of 180).
        """
        if step_deg is not None and (max_deg != 180 or 180 % step_deg != 0):
            raise ValueError(f"RotationAndCropValid(step_deg={step_deg}) needs max_deg=180 and "
                             f"a step that divides 180, got max_deg={max_deg}.")
        self.max_deg, self.interp, self.step_deg = max_deg, interp, step_deg
        super().__init__()

    def get_transform(self, img):
        deg = float(self.rng.uniform(-self.max_deg, self.max_deg))
        if self.step_deg:
            deg = deg // self.step_deg * self.step_deg
        h, w = img.shape[:2]
        cx, cy = w * 0.5, h * 0.5
        rotate = WarpAffineTransform(_backend.rotation_matrix((cx - 0.5, cy - 0.5), deg), (w, h),
                                     interp=self.interp)
        new_w, new_h = self.largest_rotated_rect(w, h, deg)
        new_w, new_h = min(new_w, w), min(new_h, h)
        crop = CropTransform(int(cy - new_h * 0.5), int(cx - new_w * 0.5), new_h, new_w)
        return TransformList([rotate, crop])

    @staticmethod
    def largest_rotated_rect(w, h, angle):
        """``(width, height)`` of the largest axis-aligned rectangle inside a ``w`` x ``h``
        rectangle rotated by ``angle`` degrees (centred on it)."""
        if w <= 0 or h <= 0:
            return 0, 0
        rad = math.radians(angle)
        sin_a, cos_a = abs(math.sin(rad)), abs(math.cos(rad))
        long_side, short_side = max(w, h), min(w, h)
        if short_side <= 2.0 * sin_a * cos_a * long_side:
            # two corners touch the long side, the other two its parallel midline
            half = 0.5 * short_side
            width, height = (half / sin_a, half / cos_a) if w >= h else (half / cos_a, half / sin_a)
        else:
            cos_2a = cos_a * cos_a - sin_a * sin_a
            width = (w * cos_a - h * sin_a) / cos_2a
            height = (h * cos_a - w * sin_a) / cos_2a
        return int(np.round(width)), int(np.round(height))
