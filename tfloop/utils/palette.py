"""``PALETTE_RGB``: distinct colors for drawing instances (tensorpack's ``utils.palette``).

The colors are generated here (golden-ratio steps around the hue circle, alternating
saturation and brightness), so neighbouring entries differ clearly.
"""
import colorsys

import numpy as np

__all__ = ["PALETTE_RGB"]

_NUM_COLORS = 80
_GOLDEN_RATIO = (5 ** 0.5 - 1) / 2


def _palette(n):
    colors = []
    for i in range(n):
        hue = (i * _GOLDEN_RATIO) % 1.0
        saturation = (0.95, 0.65)[i % 2]
        value = (0.95, 0.75, 0.55)[(i // 2) % 3]
        colors.append(colorsys.hsv_to_rgb(hue, saturation, value))
    return (np.asarray(colors) * 255.0).astype("float32")


PALETTE_RGB = _palette(_NUM_COLORS)
