"""Augmentors that warp the image by an affine map: shifts, rotations, rotation and crop, and
random affine maps (scale, translation, rotation, shear) about the image centre."""
import math

import numpy as np

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import CropTransform, TransformList, WarpAffineTransform

__all__ = ["Shift", "Rotation", "RotationAndCropValid", "Affine"]


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


def _check_pair(owner, name, value):
    if value is not None and (not isinstance(value, (tuple, list)) or len(value) != 2):
        raise ValueError(f"{owner}: {name} must be a pair of floats (a, b), got {value!r}.")


class Shift(ImageAugmentor):
    """Shift the image by a random whole number of pixels: at most ``horiz_frac`` of its width
    left or right and ``vert_frac`` of its height up or down. The image keeps its size; uncovered
    pixels are filled by ``border`` (replicated edge by default, or ``border_value``).

    Example:
        >>> import numpy as np
        >>> Shift(horiz_frac=0.2).augment(np.zeros((4, 10), np.uint8)).shape
        (4, 10)
    """

    def __init__(self, horiz_frac=0, vert_frac=0, border=_backend.BORDER_REPLICATE,
                 border_value=0):
        """
        Args:
            horiz_frac (float): largest horizontal shift, as a fraction of the width (< 1).
            vert_frac (float): largest vertical shift, as a fraction of the height (< 1).
            border (int): OpenCV border mode: ``BORDER_REPLICATE`` (1) or ``BORDER_CONSTANT`` (0).
            border_value: the fill value with ``BORDER_CONSTANT``.
        """
        for name, frac in (("horiz_frac", horiz_frac), ("vert_frac", vert_frac)):
            if not 0 <= frac < 1:
                raise ValueError(f"Shift: {name} must be in [0, 1), got {frac}.")
        self.horiz_frac, self.vert_frac = horiz_frac, vert_frac
        self.border, self.border_value = border, border_value
        super().__init__()

    def get_transform(self, img):
        max_dx, max_dy = self.horiz_frac * img.shape[1], self.vert_frac * img.shape[0]
        dx = np.round(self._rand_range(-max_dx, max_dx))
        dy = np.round(self._rand_range(-max_dy, max_dy))
        mat = np.array([[1, 0, dx], [0, 1, dy]], dtype=np.float64)
        return WarpAffineTransform(mat, img.shape[1::-1], borderMode=self.border,
                                   borderValue=self.border_value)


class Affine(ImageAugmentor):
    """A random affine map about the image centre: scale by a factor in ``scale``, rotate by an
    angle in ``[-rotate_max_deg, rotate_max_deg]``, shear by an angle in ``[-shear, shear]``
    (degrees), then translate by a whole number of pixels of at most ``translate_frac`` of the
    width and height. The image keeps its size; coordinates follow the same map.

    Example:
        >>> import numpy as np
        >>> aug = Affine(scale=(0.9, 1.1), translate_frac=(0.1, 0.1), rotate_max_deg=10, shear=5)
        >>> aug.augment(np.zeros((8, 10, 3), np.uint8)).shape
        (8, 10, 3)
    """

    def __init__(self, scale=None, translate_frac=None, rotate_max_deg=0.0, shear=0.0,
                 interp=_backend.INTER_LINEAR, border=_backend.BORDER_REPLICATE, border_value=0):
        """
        Args:
            scale (tuple): ``(a, b)``: the scale factor is drawn from ``[a, b]``; 1 by default.
            translate_frac (tuple): ``(a, b)``: largest horizontal shift as a fraction of the
                width, and vertical as a fraction of the height; none by default.
            rotate_max_deg (float): largest absolute rotation, in degrees.
            shear (float): largest absolute shear angle, in degrees (0 to 180).
            interp (int): OpenCV interpolation code.
            border (int): OpenCV border mode: ``BORDER_REPLICATE`` (1) or ``BORDER_CONSTANT`` (0).
            border_value: the fill value with ``BORDER_CONSTANT``.
        """
        _check_pair("Affine", "scale", scale)
        _check_pair("Affine", "translate_frac", translate_frac)
        if not 0 <= shear <= 180:
            raise ValueError(f"Affine: shear must be an angle in [0, 180] degrees, got {shear}.")
        self.scale, self.translate_frac = scale, translate_frac
        self.rotate_max_deg, self.shear = rotate_max_deg, shear
        self.interp, self.border, self.border_value = interp, border, border_value
        super().__init__()

    def _draw_shift(self, img):
        if self.translate_frac is None:
            return 0.0, 0.0
        max_dx = self.translate_frac[0] * img.shape[1]
        max_dy = self.translate_frac[1] * img.shape[0]
        return (float(np.round(self._rand_range(-max_dx, max_dx))),
                float(np.round(self._rand_range(-max_dy, max_dy))))

    def get_transform(self, img):
        scale = 1.0 if self.scale is None else float(self._rand_range(*self.scale))
        dx, dy = self._draw_shift(img)
        shear = float(self._rand_range(-self.shear, self.shear)) if self.shear > 0 else 0.0
        center = np.array(img.shape[1::-1], dtype=np.float64) * 0.5 - 0.5
        deg = float(self._rand_range(-self.rotate_max_deg, self.rotate_max_deg))
        mat = _backend.rotation_matrix(tuple(center), deg, scale)
        if shear:
            # shear the second column, then move the centre back where it was
            sin_s, cos_s = math.sin(math.radians(shear)), math.cos(math.radians(shear))
            mat[0, 1] = mat[0, 1] * cos_s + mat[0, 0] * sin_s
            mat[1, 1] = mat[1, 1] * cos_s + mat[1, 0] * sin_s
            mat[:, 2] = center - mat[:, :2] @ center
        mat[:, 2] += (dx, dy)
        return WarpAffineTransform(mat, img.shape[1::-1], self.interp, self.border,
                                   self.border_value)
