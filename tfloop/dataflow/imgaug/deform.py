"""A slow elastic deformation (tensorpack's ``imgaug.deform``, kept out of ``imgaug``'s names as
tensorpack does): every pixel moves by a Gaussian-weighted mix of random offsets at anchors."""
import numpy as np

from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import TransformFactory
from tfloop.utils import logger

__all__ = []


class GaussianMap:
    """Gaussian weights over an image of ``image_shape`` (h, w), centred on an anchor.

    Example:
        >>> w = GaussianMap((4, 4)).get_gaussian_weight((0.5, 0.5))
        >>> float(w[2, 2])
        1.0
    """

    def __init__(self, image_shape, sigma=0.5):
        """
        Args:
            image_shape (tuple): ``(h, w)``.
            sigma (float): the width of the Gaussian, in fractions of the image size.
        """
        if len(image_shape) != 2:
            raise ValueError(f"GaussianMap needs an (h, w) shape, got {image_shape!r}.")
        self.shape, self.sigma = tuple(image_shape), sigma

    def get_gaussian_weight(self, anchor):
        """``exp(-d^2 / sigma)`` (h, w) float32, where ``d`` is each pixel's distance to
        ``anchor = (y, x)``, both in fractions of the height and width."""
        ys, xs = np.mgrid[:self.shape[0], :self.shape[1]].astype(np.float32)
        dy = ys / self.shape[0] - anchor[0]
        dx = xs / self.shape[1] - anchor[1]
        return np.exp(-(dx ** 2 + dy ** 2) / self.sigma)


def np_sample(img, coords):
    """Bilinear samples of ``img`` (h, w, c) at ``coords`` (h', w', 2) of ``(y, x)`` positions,
    clamped to the image: an (h', w', c) float array.

    Example:
        >>> img = np.arange(4, dtype=np.float32).reshape(2, 2, 1)
        >>> np_sample(img, np.array([[[0.5, 0.5]]])).tolist()
        [[[1.5]]]
    """
    limit = np.array([img.shape[0] - 1, img.shape[1] - 1])
    coords = np.clip(coords, 0, limit)
    low = np.floor(coords).astype(np.int32)
    high = np.minimum(low + 1, limit)
    frac = (coords - low)[..., np.newaxis]
    fy, fx = frac[..., 0, :], frac[..., 1, :]
    (y0, x0), (y1, x1) = np.moveaxis(low, -1, 0), np.moveaxis(high, -1, 0)
    return (img[y0, x0] * (1 - fy) * (1 - fx) + img[y0, x1] * (1 - fy) * fx
            + img[y1, x0] * fy * (1 - fx) + img[y1, x1] * fy * fx)


class GaussianDeform(ImageAugmentor):
    """Move every pixel of an image of shape ``shape`` by a mix of random offsets drawn at each
    anchor (uniform in ``[-randrange, randrange]`` pixels), weighted by Gaussians around the
    anchors. Slow: use it with several worker processes. Images only (not coordinates); the
    result is float.

    Example:
        >>> aug = GaussianDeform([(0.2, 0.2), (0.8, 0.8)], (8, 8))
        >>> aug.augment(np.zeros((8, 8, 3), np.uint8)).shape
        (8, 8, 3)
    """

    def __init__(self, anchors, shape, sigma=0.5, randrange=None):
        """
        Args:
            anchors (list): ``(y, x)`` anchor positions, in fractions of the image size.
            shape (tuple): the images' ``(h, w)``.
            sigma (float): the width of each anchor's Gaussian weight.
            randrange (float): the largest offset, in pixels; ``shape[0] / 8`` by default.
        """
        logger.warn("GaussianDeform is slow: run it in several processes "
                    "(e.g. MultiProcessMapData).")
        self.anchors, self.shape, self.sigma = list(anchors), tuple(shape), sigma
        self.randrange = self.shape[0] / 8 if randrange is None else randrange
        self._grid = np.mgrid[0:self.shape[0], 0:self.shape[1]].transpose(1, 2, 0).astype(
            np.float32)
        gaussian = GaussianMap(self.shape, sigma=sigma)
        self._gws = np.stack([gaussian.get_gaussian_weight(a) for a in self.anchors], axis=-1)
        super().__init__()

    def get_transform(self, img):
        offsets = (self.rng.rand(len(self.anchors), 2).astype(np.float32) - 0.5) \
            * 2 * self.randrange
        return TransformFactory(name=repr(self),
                                apply_image=lambda image: self._deform(image, offsets))

    def _deform(self, img, offsets):
        if img.shape[:2] != self.shape:
            raise ValueError(f"GaussianDeform was built for images of shape {self.shape}, got "
                             f"{img.shape[:2]}.")
        squeeze = img.ndim == 2
        out = np_sample(img[..., np.newaxis] if squeeze else img, self._grid + self._gws @ offsets)
        return out[..., 0] if squeeze else out
