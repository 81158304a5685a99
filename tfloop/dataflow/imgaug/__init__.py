"""Image augmentors (tensorpack's ``imgaug``): numpy-based, OpenCV used where installed.

Every augmentor draws its random choices from its own RNG, re-seeded per process. The modules
keep tensorpack's names: ``geometry`` (affine warps), ``misc`` (flips, resizing), ``paste``,
``crop``, ``imgproc`` (pixel values), ``noise``, ``convert``, ``meta``, ``external`` (other
augmentation libraries) and ``deform``.
"""
from tfloop.dataflow.imgaug import (base as _base, convert as _convert,  # noqa: I001
                                    crop as _crop, external as _external,
                                    geometry as _geometry, imgproc as _imgproc, meta as _meta,
                                    misc as _misc, noise as _noise, paste as _paste,
                                    transform as _transform)
from tfloop.dataflow.imgaug.transform import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.base import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.geometry import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.misc import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.paste import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.crop import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.imgproc import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.noise import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.convert import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.meta import *  # noqa: F401,F403
from tfloop.dataflow.imgaug.external import *  # noqa: F401,F403

__all__ = (_transform.__all__ + _base.__all__ + _geometry.__all__ + _misc.__all__ + _paste.__all__
           + _crop.__all__ + _imgproc.__all__ + _noise.__all__ + _convert.__all__ + _meta.__all__
           + _external.__all__)
