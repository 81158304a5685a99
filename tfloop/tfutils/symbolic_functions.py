"""tensorpack's small graph functions: ``print_stat``, ``rms`` and ``psnr``."""
import math

from tfloop.compat import tf, tfv1

__all__ = ["print_stat", "rms", "psnr"]


def print_stat(x, message=None):
    """``x``, printing its shape, mean (and root mean square for floats) and values each time it
    is evaluated (to stderr, prefixed by ``message``, by default ``x``'s op name).

    Example:
        >>> logits = print_stat(logits, "logits")
    """
    message = x.op.name if message is None else message
    stats = [tf.shape(x), tf.reduce_mean(x)]
    if x.dtype.is_floating:
        stats.append(rms(x))
    printed = tf.print(message, *stats, x, summarize=20)
    with tf.control_dependencies([printed]):
        return tf.identity(x, name="print_" + x.op.name.split("/")[-1])


def rms(x, name=None):
    """The root mean square of ``x``: ``sqrt(mean(x ** 2))``, named ``<x's op>/rms`` by default.

    Example:
        >>> add_moving_summary(rms(weights))
    """
    if name is None:
        with tfv1.name_scope(None):   # the name holds x's scope already
            return tf.sqrt(tf.reduce_mean(tf.square(x)), name=x.op.name + "/rms")
    return tf.sqrt(tf.reduce_mean(tf.square(x)), name=name)


def psnr(prediction, ground_truth, maxp=None, name="psnr"):
    """Peak signal-to-noise ratio in dB: ``20 log10(maxp) - 10 log10(MSE)``, or
    ``-10 log10(MSE)`` without ``maxp``.

    Args:
        prediction, ground_truth: tensors of one shape.
        maxp (float): the largest possible value (255 for 8-bit images).

    Example:
        >>> add_moving_summary(psnr(output, target, maxp=255.))
    """
    mse = tf.reduce_mean(tf.square(prediction - ground_truth))
    neg_db = tf.multiply(tf.math.log(mse) / math.log(10.0), -10.0)
    if maxp is None:
        return tf.identity(neg_db, name=name)
    return tf.add(neg_db, 20.0 * math.log10(float(maxp)), name=name)
