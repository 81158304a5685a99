"""One dtype policy for every input source: which casts to a declared input dtype are safe.

A cast is *safe* when it keeps the kind of value or moves to a wider kind: bool -> integer ->
floating point -> complex, any width within a kind (float64 -> float32, int64 -> int32, float16 ->
float32). These are what numpy and TensorFlow users get by default (numpy's float64 features and
int64 labels), so input sources apply them and say so once. A float for an integer input is
*integral*: taken, as TensorFlow 1's feed took it, when every value is a whole number the integer
dtype holds (checked on the values; see :mod:`tfloop.utils.integral`), refused naming the first
value that would change otherwise. Anything else (a string to a number, a complex to a real)
changes the values' meaning and is refused with the cast to write.
"""
import threading

import numpy as np

from tfloop.compat import tf
from tfloop.utils import logger
from tfloop.utils.integral import first_changed_value, integer_bounds

__all__ = ["INTEGRAL", "SAFE", "SAME", "UNSAFE", "cast_kind", "note_fed_cast",
           "check_integral_values", "integral_cast"]

SAME, SAFE, UNSAFE, INTEGRAL = "same", "safe", "unsafe", "integral"

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
    (cast them), :data:`INTEGRAL` (floats for an integer input: cast them if no value changes) or
    :data:`UNSAFE` (refuse them).

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
    if (got_kind, want_kind) == ("floating", "integer"):
        return INTEGRAL
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
    why = "a safe cast" if cast_kind(got, want) == SAFE else "whole numbers, checked"
    logger.info(f"{source}: input {input_name or '<unnamed>'} is fed {np.dtype(got).name} "
                f"values, cast to {tf.as_dtype(want).name} as inputs() declares ({why}; "
                f"this note is logged once).")


def _integral_refusal(where, input_description, dtype):
    return (f"{where}: input {input_description} takes floats only when they are whole numbers "
            f"that {dtype} can hold; got")


_INTEGRAL_FIX = "Round the values (np.rint) if that is what you mean, or declare a float input."


def check_integral_values(values, dtype, where, input_description):
    """``values`` (floats) cast to the integer ``dtype``, or ValueError naming ``where``, the
    input and the first value the cast would change (a fraction, nan, inf, out of range).

    Example:
        >>> check_integral_values(np.array([0.0, 1.0]), tf.int32, "FeedInput datapoint 0", "y")
        array([0, 1], dtype=int32)
    """
    dtype = tf.as_dtype(dtype)
    bad = first_changed_value(values, dtype.as_numpy_dtype)
    if bad is not None:
        raise ValueError(f"{_integral_refusal(where, input_description, dtype.name)} {bad!r}. "
                         f"{_INTEGRAL_FIX}")
    return np.asarray(values).astype(dtype.as_numpy_dtype)


def integral_cast(tensor, dtype, where, input_description, name=None):
    """``tensor`` (floats) cast to the integer ``dtype`` in the graph, after an assertion that
    fails, naming the input and the first offending value, when the cast would change a value.

    Example:
        >>> label = integral_cast(element[1], tf.int32, "DatasetInput", "label: int32 (None,)")
    """
    dtype = tf.as_dtype(dtype)
    low, high = integer_bounds(dtype.as_numpy_dtype)
    flat = tf.reshape(tensor, [-1])
    ok = tf.math.logical_and(tf.math.is_finite(flat), tf.equal(flat, tf.round(flat)))
    ok = tf.math.logical_and(ok, tf.math.logical_and(flat >= low, flat < high))
    first_bad = tf.boolean_mask(flat, tf.logical_not(ok))[:1]
    check = tf.debugging.Assert(
        tf.reduce_all(ok), [_integral_refusal(where, input_description, dtype.name), first_bad,
                            _INTEGRAL_FIX], summarize=1)
    with tf.control_dependencies([check]):
        return tf.cast(tensor, dtype, name=name)
