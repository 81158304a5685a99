"""Standard datasets read from local files (tfloop never downloads them).

Each dataset reads from ``dir=`` when given, else ``$TFLOOP_DATASET/<name>`` (or
``$TENSORPACK_DATASET/<name>``), else ``~/tfloop_data/<name>``; when files are missing the
error lists them and says where to download them from.
"""
from tfloop.dataflow.dataset import cifar as _cifar, mnist as _mnist  # noqa: I001
from tfloop.dataflow.dataset.mnist import *  # noqa: F401,F403
from tfloop.dataflow.dataset.cifar import *  # noqa: F401,F403

__all__ = _mnist.__all__ + _cifar.__all__
