"""One dtype policy for every input source: which casts to a declared input dtype are safe.

A cast is *safe* when it keeps the kind of value or moves to a wider kind: bool -> integer ->
floating point -> complex, any width within a kind (float64 -> float32, int64 -> int32, float16 ->
float32). These are what numpy and TensorFlow users get by default (numpy's float64 features and
int64 labels), so input sources apply them and say so once. Anything else (a float to an integer,
a string to a number, a complex to a real) changes the values' meaning and is refused with the
cast to write.
"""
import threading

import numpy as np

from tfloop.compat import tf
from tfloop.utils import logger

__all__ = ["SAFE", "SAME", "UNSAFE", "cast_kind", "note_fed_cast"]

SAME, SAFE, UNSAFE = "same", "safe", "unsafe"

# The order of kinds: a cast may keep the kind or move to a later one.
_ORDER = {"bool": 0, "integer": 1, "floating": 2, "complex": 3}
_NUMPY_KINDS = {"b": "bool", "u": "integer", "i": "integer", "f": "floating", "c": "complex",
                "U": "string", "S": "string", "O": "string"}


def _kind(dtype):
    """``bool``, ``integer``, ``floating``, ``complex``, ``string``, or None for other dtypes."""
    try:
        dtype = tf.as_dtype(dtype)
    except TypeError:
        return _NUMPY_KINDS.get(np.dtype(dtype).kind)
    if dtype == tf.string:
        return "string"
    if dtype.is_bool:
        return "bool"
    if dtype.is_quantized:
        return None
    if dtype.is_integer:
        return "integer"
    if dtype.is_floating:
        return "floating"
    if dtype.is_complex:
        return "complex"
    return None


def _same(got, want):
    try:
        return tf.as_dtype(got) == tf.as_dtype(want)
    except TypeError:
        return _kind(got) == _kind(want) == "string"


def cast_kind(got, want):
    """How values of dtype ``got`` reach an input of dtype ``want``: :data:`SAME`, :data:`SAFE`
    (cast them) or :data:`UNSAFE` (refuse them).

    Args:
        got: the dtype of the data (a ``tf.DType``, numpy dtype or anything either accepts).
        want: the dtype ``inputs()`` declares.

    Example:
        >>> cast_kind(tf.float64, tf.float32), cast_kind(tf.float32, tf.int32)
        ('safe', 'unsafe')
    """
    if _same(got, want):
        return SAME
    got_kind, want_kind = _kind(got), _kind(want)
    if got_kind in _ORDER and want_kind in _ORDER and _ORDER[got_kind] <= _ORDER[want_kind]:
        return SAFE
    return UNSAFE


_noted = set()
_noted_lock = threading.Lock()


def note_fed_cast(source, input_name, got, want):
    """Log, once per process for each source kind, input and pair of dtypes, that values fed by
    ``source`` (``"FeedInput"``, ``"QueueInput"`` ...) are cast."""
    key = (source, input_name, str(got), str(want))
    with _noted_lock:
        if key in _noted:
            return
        _noted.add(key)
    logger.info(f"{source}: input {input_name or '<unnamed>'} is fed {np.dtype(got).name} "
                f"values, cast to {tf.as_dtype(want).name} as inputs() declares (a safe cast; "
                f"this note is logged once).")
