"""The one place that imports TensorFlow.

Every other tfloop module takes ``tf`` (TensorFlow 2.x) and ``tfv1`` (``tf.compat.v1``) from here.
Importing this module does not change any global TensorFlow behaviour: tfloop builds its graphs in
an explicit ``tf.Graph`` of its own, so a user's eager code keeps working beside it.
"""

from tfloop.utils.extras import install_command

MIN_TF_VERSION = (2, 16)

try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        f"tfloop needs TensorFlow, which is not installed: run `{install_command('cpu')}` "
        f"(or `{install_command('gpu')}` for CUDA).") from None


def _parse_version(version):
    parts = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


TF_VERSION = _parse_version(tf.__version__)
if TF_VERSION < MIN_TF_VERSION:
    raise ImportError(
        f"tfloop needs TensorFlow >= {MIN_TF_VERSION[0]}.{MIN_TF_VERSION[1]}, found "
        f"{tf.__version__}: run `{install_command('cpu', upgrade=True)}`.")

tfv1 = tf.compat.v1

__all__ = ["tf", "tfv1", "TF_VERSION", "is_tfv2", "onednn_enabled"]


def is_tfv2():
    """Whether TensorFlow runs with its 2.x behaviour (tensorpack's check): True unless the
    program called ``tf.compat.v1.disable_v2_behavior()``. tfloop builds its graphs with
    ``tf.compat.v1`` either way."""
    from tensorflow.python import tf2
    return tf2.enabled()


def onednn_enabled():
    """Whether TensorFlow's CPU kernels are oneDNN's in this process: its default on x86 CPUs
    with AVX-512 VNNI/BF16 or AMX, or set by ``TF_ENABLE_ONEDNN_OPTS``, read once at start-up."""
    try:
        from tensorflow.python.util import _pywrap_util_port
    except ImportError:  # a TensorFlow without the flag: assume its kernels may be oneDNN's
        return True
    return bool(_pywrap_util_port.IsMklEnabled())
