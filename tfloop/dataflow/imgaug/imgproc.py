"""Augmentors that change pixel values only: hue, brightness, contrast, normalization, blur,
colour (tensorpack's ``imgaug.imgproc``). Results keep the input dtype unless the augmentor says
otherwise."""
import numpy as np

from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import PhotometricAugmentor

__all__ = ["Hue", "Brightness", "BrightnessScale", "Contrast", "MeanVarianceNormalize",
           "GaussianBlur", "Gamma", "Clip", "Saturation", "Lighting", "MinMaxNormalize"]


def back_to_dtype(img, old_dtype, clip):
    """``img`` (computed in float) as ``old_dtype`` again, clipped to [0, 255] when ``clip`` or
    for uint8 images."""
    if clip or old_dtype == np.uint8:
        img = np.clip(img, 0, 255)
    return img.astype(old_dtype)


class Hue(PhotometricAugmentor):
    """Rotate the hue of a 3-channel image by a random offset drawn from ``range``, in OpenCV's
    hue unit (half degrees: 180 is a full turn), through OpenCV's HSV conversion. uint8 and
    float32 images keep their dtype. Needs OpenCV.

    Example:
        >>> import numpy as np
        >>> red = np.zeros((1, 1, 3), np.uint8); red[..., 0] = 255
        >>> Hue(range=(60, 60)).augment(red).tolist()  # a third of a turn: red to green
        [[[0, 255, 0]]]
    """

    def __init__(self, range=(0, 180), rgb=True):
        """
        Args:
            range (tuple): ``(low, high)`` of the offset; offsets beyond [-90, 90] wrap around.
            rgb (bool): the image is RGB (else BGR).
        """
        _backend.require_cv2("imgaug.Hue")
        self.range, self.rgb = range, bool(rgb)
        super().__init__()

    def _get_augment_params(self, _):
        return self._rand_range(*self.range)

    def _augment(self, img, hue):
        cv2 = _backend.require_cv2(f"imgaug.{type(self).__name__}")
        if img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"Hue needs an (h, w, 3) colour image, got shape {img.shape}.")
        to_hsv, from_hsv = ((cv2.COLOR_RGB2HSV, cv2.COLOR_HSV2RGB) if self.rgb
                            else (cv2.COLOR_BGR2HSV, cv2.COLOR_HSV2BGR))
        work = img if img.dtype == np.uint8 else img.astype(np.float32)
        hsv = cv2.cvtColor(work, to_hsv)
        if hsv.dtype == np.uint8:  # OpenCV's 8-bit hue is in [0, 180), rounded down
            hsv[..., 0] = np.floor((hsv[..., 0] + np.float32(hue)) % 180)
        else:  # and its floating-point hue in [0, 360)
            hsv[..., 0] = (hsv[..., 0] + 2 * hue) % 360
        return cv2.cvtColor(hsv, from_hsv).astype(img.dtype)


class Brightness(PhotometricAugmentor):
    """Add a random value in ``[-delta, delta]`` to every pixel.

    Example:
        >>> import numpy as np
        >>> out = Brightness(10).augment(np.full((2, 2), 100, np.uint8))
        >>> bool(90 <= out[0, 0] <= 110)
        True
    """

    def __init__(self, delta, clip=True):
        """
        Args:
            delta (float): largest change, > 0.
            clip (bool): clip to [0, 255] even for float images.
        """
        if delta <= 0:
            raise ValueError(f"Brightness needs delta > 0, got {delta}.")
        self.delta, self.clip = delta, clip
        super().__init__()

    def _get_augment_params(self, _):
        return self._rand_range(-self.delta, self.delta)

    def _augment(self, img, v):
        return back_to_dtype(img.astype("float32") + v, img.dtype, self.clip)


class BrightnessScale(PhotometricAugmentor):
    """Multiply every pixel by a random factor in ``range``.

    Example:
        >>> import numpy as np
        >>> BrightnessScale((2, 2)).augment(np.full((1,), 10, np.uint8)).tolist()
        [20]
    """

    def __init__(self, range, clip=True):
        """
        Args:
            range (tuple): ``(low, high)`` of the factor.
            clip (bool): clip to [0, 255] even for float images.
        """
        self.range, self.clip = range, clip
        super().__init__()

    def _get_augment_params(self, _):
        return self._rand_range(*self.range)

    def _augment(self, img, v):
        return back_to_dtype(img.astype("float32") * v, img.dtype, self.clip)


class Contrast(PhotometricAugmentor):
    """``x = (x - mean) * factor + mean`` with a random factor in ``factor_range``; the mean is
    per channel (``rgb=None``) or of the grey image (``rgb=True``/``False`` for RGB/BGR).

    Example:
        >>> import numpy as np
        >>> Contrast((0.0, 0.0)).augment(np.array([[0, 200]], np.uint8)).tolist()
        [[100, 100]]
    """

    def __init__(self, factor_range, rgb=None, clip=True):
        """
        Args:
            factor_range (tuple): ``(low, high)`` of the contrast factor.
            rgb (bool or None): None: per-channel mean; else the grey mean of an RGB/BGR image.
            clip (bool): clip to [0, 255] even for float images.
        """
        self.factor_range, self.rgb, self.clip = factor_range, rgb, clip
        super().__init__()

    def _get_augment_params(self, _):
        return self._rand_range(*self.factor_range)

    def _augment(self, img, r):
        if img.ndim == 3 and self.rgb is not None:
            mean = np.mean(_backend.to_gray(img, self.rgb))
        elif img.ndim == 3:
            mean = np.mean(img, axis=(0, 1), keepdims=True)
        else:
            mean = np.mean(img)
        return back_to_dtype(img * r + mean * (1 - r), img.dtype, self.clip)


def _float_stats(img, all_channel, *reductions):
    """``img`` as float32, then each ``reduction`` of it over all channels together
    (``all_channel``) or over each channel, broadcastable against the image."""
    img = img.astype("float32")
    axes = None if all_channel else (0, 1)
    return (img, *(reduce(img, axis=axes, keepdims=True) for reduce in reductions))


class MeanVarianceNormalize(PhotometricAugmentor):
    """``x = (x - mean) / max(std, 1 / sqrt(number of values))``, over all channels or per
    channel. Always returns float32.

    Example:
        >>> import numpy as np
        >>> out = MeanVarianceNormalize().augment(np.array([[0, 2]], np.uint8))
        >>> out.tolist(), out.dtype
        ([[-1.0, 1.0]], dtype('float32'))
    """

    def __init__(self, all_channel=True):
        """
        Args:
            all_channel (bool): normalize all channels together (else each on its own).
        """
        self.all_channel = all_channel
        super().__init__()

    def _augment(self, img, _):
        img, mean, std = _float_stats(img, self.all_channel, np.mean, np.std)
        std = np.maximum(std, np.float32(1.0 / np.sqrt(img.size)))
        return ((img - mean) / std).astype(np.float32)


class GaussianBlur(PhotometricAugmentor):
    """Gaussian blur with a random window ``2 * size + 1``, ``size`` in ``[low, high)``.

    Example:
        >>> import numpy as np
        >>> GaussianBlur(size_range=(1, 2)).augment(np.zeros((5, 5), np.uint8)).shape
        (5, 5)
    """

    def __init__(self, size_range=(0, 3), sigma_range=(0, 0), symmetric=True, max_size=None):
        """
        Args:
            size_range (tuple): ``[low, high)`` of the half window size (an int means ``(0, n)``).
            sigma_range (tuple): ``(low, high)`` of sigma; 0 derives it from the window.
            symmetric (bool): the same size and sigma along x and y.
            max_size (int): old name for ``size_range=(0, max_size)``.
        """
        if max_size is not None:
            size_range = (0, max_size)
        if not isinstance(size_range, (list, tuple)):
            size_range = (0, size_range)
        self.size_range, self.sigma_range, self.symmetric = size_range, sigma_range, symmetric
        super().__init__()

    def _get_augment_params(self, _):
        size_xy = self.rng.randint(self.size_range[0], self.size_range[1], size=(2,)) * 2 + 1
        sigma_xy = self._rand_range(*self.sigma_range, size=(2,))
        if self.symmetric:
            size_xy[1], sigma_xy[1] = size_xy[0], sigma_xy[0]
        return tuple(size_xy), tuple(sigma_xy)

    def _augment(self, img, params):
        return _backend.gaussian_blur(img, *params)


class Gamma(PhotometricAugmentor):
    """Gamma correction ``255 * (x / 255) ** (1 / (1 + g))``, ``g`` random in ``range``.

    Example:
        >>> import numpy as np
        >>> Gamma((0, 0)).augment(np.array([0, 255], np.uint8)).tolist()
        [0, 255]
    """

    def __init__(self, range=(-0.5, 0.5)):
        """
        Args:
            range (tuple): ``(low, high)`` of ``g``.
        """
        self.range = range
        super().__init__()

    def _get_augment_params(self, _):
        return self._rand_range(*self.range)

    def _augment(self, img, gamma):
        lut = ((np.arange(256, dtype="float32") / 255) ** (1. / (1. + gamma)) * 255)
        return lut.astype("uint8")[np.clip(img, 0, 255).astype("uint8")].astype(img.dtype)


class Clip(PhotometricAugmentor):
    """Clip pixel values to ``[min, max]``.

    Example:
        >>> import numpy as np
        >>> Clip(0, 1).augment(np.array([-1.0, 2.0])).tolist()
        [0.0, 1.0]
    """

    def __init__(self, min=0, max=255):
        self.min, self.max = min, max
        super().__init__()

    def _augment(self, img, _):
        return np.clip(img, self.min, self.max)


class Saturation(PhotometricAugmentor):
    """Blend an RGB (or BGR) image with its grey version by a random factor in
    ``[1 - alpha, 1 + alpha]``.

    Example:
        >>> import numpy as np
        >>> Saturation(0.4).augment(np.zeros((2, 2, 3), np.uint8)).shape
        (2, 2, 3)
    """

    def __init__(self, alpha=0.4, rgb=True, clip=True):
        """
        Args:
            alpha (float): largest change, below 1.
            rgb (bool): the image is RGB (else BGR).
            clip (bool): clip to [0, 255] even for float images.
        """
        if not 0 <= alpha < 1:
            raise ValueError(f"Saturation needs 0 <= alpha < 1, got {alpha}.")
        self.alpha, self.rgb, self.clip = alpha, bool(rgb), clip
        super().__init__()

    def _get_augment_params(self, _):
        return 1 + self._rand_range(-self.alpha, self.alpha)

    def _augment(self, img, v):
        grey = _backend.to_gray(img, self.rgb)
        return back_to_dtype(img * v + (grey * (1 - v))[:, :, np.newaxis], img.dtype, self.clip)


class Lighting(PhotometricAugmentor):
    """AlexNet's PCA lighting noise: add ``eigvec @ (eigval * N(0, std))`` to every pixel.

    Example:
        >>> import numpy as np
        >>> aug = Lighting(0.1, eigval=[0.2, 0.01, 0.001], eigvec=np.eye(3))
        >>> aug.augment(np.zeros((2, 2, 3), np.float32)).shape
        (2, 2, 3)
    """

    def __init__(self, std, eigval, eigvec, clip=True):
        """
        Args:
            std (float): standard deviation of the noise.
            eigval: the 3 eigenvalues of the pixel covariance.
            eigvec: 3x3 matrix, one eigenvector per column.
            clip (bool): clip to [0, 255] even for float images.
        """
        self.eigval = np.asarray(eigval, dtype="float32")
        self.eigvec = np.asarray(eigvec, dtype="float32")
        if self.eigval.shape != (3,) or self.eigvec.shape != (3, 3):
            raise ValueError(f"Lighting needs 3 eigenvalues and a 3x3 eigvec, got shapes "
                             f"{self.eigval.shape} and {self.eigvec.shape}.")
        self.std, self.clip = std, clip
        super().__init__()

    def _get_augment_params(self, img):
        if img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(f"Lighting needs (h, w, 3) images, got shape {img.shape}.")
        return (self.rng.randn(3) * self.std).astype("float32")

    def _augment(self, img, v):
        inc = self.eigvec @ (v * self.eigval)
        return back_to_dtype(img + inc, img.dtype, self.clip)


class MinMaxNormalize(PhotometricAugmentor):
    """Linearly map pixel values to ``[min, max]``. Always returns float32.

    Example:
        >>> import numpy as np
        >>> MinMaxNormalize(0, 1).augment(np.array([[2, 4]], np.uint8)).tolist()
        [[0.0, 1.0]]
    """

    def __init__(self, min=0, max=255, all_channel=True):
        self.min, self.max, self.all_channel = min, max, all_channel
        super().__init__()

    def _augment(self, img, _):
        img, low, high = _float_stats(img, self.all_channel, np.min, np.max)
        return (self.max - self.min) * (img - low) / np.maximum(high - low, 1e-12) + self.min
