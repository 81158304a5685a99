"""Image augmentors (tensorpack's ``imgaug``): numpy-based, OpenCV used where installed.

Every augmentor draws its random choices from its own RNG, re-seeded per process.
"""
from tfloop.dataflow.imgaug import (base as _base, convert as _convert,  # noqa: I001
                                    crop as _crop, geometry as _geometry, meta as _meta,
                                    noise as _noise, photometric as _photometric,
                                    transform as _transform, warp as _warp)
from tfloop.dataflow.imgaug.transform import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.base import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.geometry import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.crop import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.warp import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.photometric import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.noise import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.convert import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.meta import *  # noqa: F401,F403

__all__ = (_transform.__all__ + _base.__all__ + _geometry.__all__ + _crop.__all__ + _warp.__all__
           + _photometric.__all__ + _noise.__all__ + _convert.__all__ + _meta.__all__)
