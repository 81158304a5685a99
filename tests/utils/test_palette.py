"""PALETTE_RGB: distinct RGB colors in [0, 255]."""
import numpy as np

from tfloop.utils.palette import PALETTE_RGB


def test_palette_holds_distinct_rgb_colors_in_range():
    assert PALETTE_RGB.ndim == 2 and PALETTE_RGB.shape[1] == 3 and len(PALETTE_RGB) >= 79
    assert PALETTE_RGB.dtype == np.float32
    assert PALETTE_RGB.min() >= 0 and PALETTE_RGB.max() <= 255
    assert len({tuple(c) for c in PALETTE_RGB.round()}) == len(PALETTE_RGB)
    neighbours = np.abs(np.diff(PALETTE_RGB, axis=0)).sum(axis=1)
    assert neighbours.min() > 30
