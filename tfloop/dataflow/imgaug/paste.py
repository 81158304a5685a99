"""Augmentors that paste the image on a larger canvas, and the fillers that make the canvas."""
import numpy as np

from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.misc import shape2d
from tfloop.dataflow.imgaug.transform import TransformFactory

__all__ = ["CenterPaste", "BackgroundFiller", "ConstantBackgroundFiller", "RandomPaste"]


class BackgroundFiller:
    """Makes the canvas that :class:`CenterPaste` pastes on; subclasses implement ``_fill``.

    Example:
        >>> import numpy as np
        >>> ConstantBackgroundFiller(7).fill((2, 2), np.zeros((1, 1), np.uint8)).tolist()
        [[7, 7], [7, 7]]
    """

    def fill(self, background_shape, img):
        """A canvas of ``background_shape`` (h, w) for ``img`` (same channels and dtype)."""
        return self._fill(tuple(background_shape), img)

    def _fill(self, background_shape, img):
        raise NotImplementedError(f"{type(self).__name__} must implement _fill.")


class ConstantBackgroundFiller(BackgroundFiller):
    """A canvas filled with ``value``.

    Example:
        >>> import numpy as np
        >>> ConstantBackgroundFiller(0).fill((1, 2), np.ones((1, 1, 3), np.float32)).shape
        (1, 2, 3)
    """

    def __init__(self, value):
        self.value = value

    def _fill(self, background_shape, img):
        shape = background_shape + img.shape[2:]
        return np.full(shape, self.value, dtype=img.dtype)


class CenterPaste(ImageAugmentor):
    """Paste the image at the centre of a larger canvas of ``background_shape``.

    Example:
        >>> import numpy as np
        >>> CenterPaste((3, 3)).augment(np.ones((1, 1), np.uint8)).tolist()
        [[0, 0, 0], [0, 1, 0], [0, 0, 0]]
    """

    def __init__(self, background_shape, background_filler=None):
        """
        Args:
            background_shape (tuple): ``(h, w)`` of the canvas.
            background_filler (BackgroundFiller): makes the canvas; zeros by default.
        """
        self.background_shape = shape2d(background_shape, "CenterPaste background_shape")
        self.background_filler = background_filler or ConstantBackgroundFiller(0)
        super().__init__()

    def _offset(self, img):
        return ((self.background_shape[0] - img.shape[0]) // 2,
                (self.background_shape[1] - img.shape[1]) // 2)

    def _paste(self, img, y0, x0):
        canvas = self.background_filler.fill(self.background_shape, img)
        canvas[y0:y0 + img.shape[0], x0:x0 + img.shape[1]] = img
        return canvas

    def _shift(self, coords, y0, x0):
        coords[:, 0] += x0
        coords[:, 1] += y0
        return coords

    def get_transform(self, img):
        if img.shape[0] > self.background_shape[0] or img.shape[1] > self.background_shape[1]:
            raise ValueError(f"{type(self).__name__}: the image of shape {img.shape} does not fit "
                             f"in the canvas {self.background_shape}.")
        y0, x0 = self._offset(img)
        return TransformFactory(name=repr(self),
                                apply_image=lambda image: self._paste(image, y0, x0),
                                apply_coords=lambda coords: self._shift(coords, y0, x0))


class RandomPaste(CenterPaste):
    """Paste the image at a random position of a larger canvas of ``background_shape``.

    Example:
        >>> import numpy as np
        >>> int(RandomPaste((4, 4)).augment(np.ones((2, 2), np.uint8)).sum())
        4
    """

    def _offset(self, img):
        return (self.rng.randint(self.background_shape[0] - img.shape[0] + 1),
                self.rng.randint(self.background_shape[1] - img.shape[1] + 1))
