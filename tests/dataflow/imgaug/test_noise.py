"""Noise augmentors."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug


def test_noise():
    noisy = imgaug.GaussianNoise(5).augment(np.full((50, 50), 100, np.uint8))
    assert noisy.dtype == np.uint8 and 3 < noisy.astype(float).std() < 7
    sp = imgaug.SaltPepperNoise(0.2, 0.2).augment(np.full((40, 40), 100, np.uint8))
    assert 0.1 < (sp == 255).mean() < 0.3 and 0.1 < (sp == 0).mean() < 0.3
    with pytest.raises(ValueError, match="at most 1"):
        imgaug.SaltPepperNoise(0.6, 0.6)
