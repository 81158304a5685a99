"""Standard datasets read from local files (tfloop never downloads them).

Each dataset reads from ``dir=`` when given, else ``$TFLOOP_DATASET/<name>`` (or
``$TENSORPACK_DATASET/<name>``), else ``~/tfloop_data/<name>``; when files are missing the
error lists them and says where to download them from.
"""
from tfloop.dataflow.dataset import cifar as _cifar, mnist as _mnist  # noqa: I001
from tfloop.dataflow.dataset import bsds500 as _bsds500, ilsvrc as _ilsvrc, svhn as _svhn
from tfloop.dataflow.dataset import caltech101 as _caltech101, places as _places
from tfloop.dataflow.dataset.mnist import *  # noqa: F401,F403
from tfloop.dataflow.dataset.cifar import *  # noqa: F401,F403
from tfloop.dataflow.dataset.bsds500 import *  # noqa: F401,F403
from tfloop.dataflow.dataset.ilsvrc import *  # noqa: F401,F403
from tfloop.dataflow.dataset.svhn import *  # noqa: F401,F403
from tfloop.dataflow.dataset.caltech101 import *  # noqa: F401,F403
from tfloop.dataflow.dataset.places import *  # noqa: F401,F403

__all__ = (_mnist.__all__ + _cifar.__all__ + _bsds500.__all__ + _ilsvrc.__all__ + _svhn.__all__
           + _caltech101.__all__ + _places.__all__)
