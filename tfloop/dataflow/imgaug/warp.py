"""Augmentors that warp the image: rotation about a random centre."""
import numpy as np

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import WarpAffineTransform

__all__ = ["Rotation"]


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
