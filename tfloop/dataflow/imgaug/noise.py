"""Augmentors that add random noise to pixel values."""
from tfloop.dataflow.imgaug.base import PhotometricAugmentor
from tfloop.dataflow.imgaug.photometric import _finish

__all__ = ["GaussianNoise", "SaltPepperNoise"]


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
        return _finish(img + noise * self.sigma, img.dtype, self.clip)


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
