"""tfloop: a tensorpack-style training loop for TensorFlow graphs.

One ``session.run`` per training step; everything else is a callback. The public API is flat::

    from tfloop import ModelDesc, TrainConfig, SimpleTrainer, launch_train_with_config, ModelSaver
"""
from tfloop.compat import tf, tfv1  # noqa: F401  (fails with one clear sentence without TensorFlow)
from tfloop.callbacks import *  # noqa: F401,F403
from tfloop.input import *  # noqa: F401,F403
from tfloop.model import ModelDesc, ModelDescBase  # noqa: F401
from tfloop.models import *  # noqa: F401,F403
from tfloop.monitors import *  # noqa: F401,F403
from tfloop.predict import *  # noqa: F401,F403
from tfloop.tfutils import *  # noqa: F401,F403
from tfloop.train import *  # noqa: F401,F403
from tfloop.utils import logger  # noqa: F401

from tfloop.version import __version__  # noqa: F401
