"""Augmentors that add random noise to pixel values."""
from tfloop.dataflow.imgaug import _backend
from tfloop.dataflow.imgaug.base import PhotometricAugmentor
from tfloop.dataflow.imgaug.imgproc import back_to_dtype

__all__ = ["JpegNoise", "GaussianNoise", "SaltPepperNoise"]


class JpegNoise(PhotometricAugmentor):
    """JPEG compression artefacts: encode the image as JPEG at a random quality drawn from
    ``[low, high)`` of ``quality_range`` and decode it again (as a colour image). Needs OpenCV.

    Example:
        >>> import numpy as np
        >>> JpegNoise((50, 60)).augment(np.zeros((8, 8, 3), np.uint8)).shape
        (8, 8, 3)
    """

    def __init__(self, quality_range=(40, 100)):
        """
        Args:
            quality_range (tuple): ``(low, high)`` JPEG quality, within [0, 100].
        """
        _backend.require_cv2("imgaug.JpegNoise")
        low, high = quality_range
        if not 0 <= low < high <= 101:
            raise ValueError(f"JpegNoise: quality_range must be (low, high) with "
                             f"0 <= low < high <= 101, got {quality_range!r}.")
        self.quality_range = quality_range
        super().__init__()

    def _get_augment_params(self, _):
        return int(self.rng.randint(*self.quality_range))

    def _augment(self, img, quality):
        cv2 = _backend.require_cv2(f"imgaug.{type(self).__name__}")
        ok, encoded = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, quality])
        if not ok:
            raise ValueError(f"JpegNoise cannot encode an image of shape {img.shape} and dtype "
                             f"{img.dtype} as JPEG; give it uint8 (h, w, 3) images.")
        return cv2.imdecode(encoded, cv2.IMREAD_COLOR).astype(img.dtype)


class GaussianNoise(PhotometricAugmentor):
    """Add noise drawn from N(0, sigma^2) to every value.

    Example:
        >>> import numpy as np
        >>> GaussianNoise(1).augment(np.full((2, 2), 100, np.uint8)).dtype
        dtype('uint8')
    """

    def __init__(self, sigma=1, clip=True):
        """
        Args:
            sigma (float): standard deviation.
            clip (bool): clip to [0, 255].
        """
        self.sigma, self.clip = sigma, clip
        super().__init__()

    def _get_augment_params(self, img):
        return self.rng.randn(*img.shape)

    def _augment(self, img, noise):
        return back_to_dtype(img + noise * self.sigma, img.dtype, self.clip)


class SaltPepperNoise(PhotometricAugmentor):
    """Set random values to 255 (probability ``white_prob``) or 0 (``black_prob``).

    Example:
        >>> import numpy as np
        >>> out = SaltPepperNoise(0.5, 0.5).augment(np.full((8, 8), 100, np.uint8))
        >>> sorted(set(out.ravel().tolist())) == [0, 255]
        True
    """

    def __init__(self, white_prob=0.05, black_prob=0.05):
        if white_prob + black_prob > 1:
            raise ValueError(f"SaltPepperNoise: white_prob + black_prob must be at most 1, got "
                             f"{white_prob} + {black_prob}.")
        self.white_prob, self.black_prob = white_prob, black_prob
        super().__init__()

    def _get_augment_params(self, img):
        return self.rng.uniform(size=img.shape)

    def _augment(self, img, draws):
        img = img.copy()
        img[draws > 1 - self.white_prob] = 255
        img[draws < self.black_prob] = 0
        return img
