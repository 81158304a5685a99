"""Image augmentors (tensorpack's ``imgaug``): numpy-based, OpenCV used where installed.

Every augmentor draws its random choices from its own RNG, re-seeded per process.
"""
from tfloop.dataflow.imgaug import base as _base
from tfloop.dataflow.imgaug import geometry as _geometry
from tfloop.dataflow.imgaug import meta as _meta
from tfloop.dataflow.imgaug import photometric as _photometric
from tfloop.dataflow.imgaug import transform as _transform
from tfloop.dataflow.imgaug.base import *
from tfloop.dataflow.imgaug.geometry import *
from tfloop.dataflow.imgaug.meta import *
from tfloop.dataflow.imgaug.photometric import *
from tfloop.dataflow.imgaug.transform import *

__all__ = (_transform.__all__ + _base.__all__ + _geometry.__all__ + _photometric.__all__
           + _meta.__all__)
