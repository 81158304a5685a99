"""tensorpack's backport of ``tf.TensorSpec`` for TensorFlow < 1.12, at its path: TensorFlow's
own ``tf.TensorSpec`` (what ``inputs()`` returns)."""
from tfloop.compat import tf

__all__ = ["TensorSpec"]

TensorSpec = tf.TensorSpec
