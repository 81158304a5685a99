"""One dtype policy for every input source: which casts to a declared input dtype are safe.

A cast is *safe* when it keeps the kind of value or moves to a wider kind: bool -> integer ->
floating point -> complex, floats of any width (float64 -> float32, float16 -> float32) and
integers to a dtype that holds all of their values (uint8 -> int32, int32 -> int64). These are
what numpy and TensorFlow users get by default (numpy's float64 features), so input sources apply
them and say so once. An integer for a narrower integer input (int64 labels for an int32 or uint8
input) is *narrowing*: taken when every value is in the input dtype's range, refused naming the
value otherwise (a cast would wrap it around: 300 -> 44 in uint8). A float for an integer input
is *integral*: taken, as TensorFlow 1's feed took it, when every value is a whole number the
integer dtype holds (checked on the values; see :mod:`tfloop.utils.integral`), refused naming the
first value that would change otherwise. Anything else (a string to a number, a complex to a
real) changes the values' meaning and is refused with the cast to write.

Fed and Python data are checked in numpy as each datapoint arrives; a tf.data pipeline's values
are checked in the graph by the cast's op (:func:`integral_cast`, :func:`range_checked_cast`).
"""
import threading

import numpy as np

from tfloop.compat import tf
from tfloop.utils import logger
from tfloop.utils.integral import first_changed_value, integer_bounds, out_of_range_value

__all__ = ["INTEGRAL", "NARROWING", "SAFE", "SAME", "UNSAFE", "cast_kind", "note_fed_cast",
           "check_integral_values", "integral_cast", "check_integer_range",
           "range_checked_cast"]

SAME, SAFE, UNSAFE, INTEGRAL, NARROWING = "same", "safe", "unsafe", "integral", "narrowing"

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


def _numpy_dtype(dtype):
    try:
        return np.dtype(tf.as_dtype(dtype).as_numpy_dtype)
    except TypeError:
        return np.dtype(dtype)


def _same(got, want):
    try:
        return tf.as_dtype(got) == tf.as_dtype(want)
    except TypeError:
        return _kind(got) == _kind(want) == "string"


def cast_kind(got, want):
    """How values of dtype ``got`` reach an input of dtype ``want``: :data:`SAME`, :data:`SAFE`
    (cast them), :data:`INTEGRAL` (floats for an integer input: cast them if no value changes),
    :data:`NARROWING` (integers for an integer input that cannot hold all of their dtype's
    values: cast them if every value is in range) or :data:`UNSAFE` (refuse them).

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
    if got_kind == want_kind == "integer" and not np.can_cast(_numpy_dtype(got),
                                                               _numpy_dtype(want), "safe"):
        return NARROWING
    if got_kind in _ORDER and want_kind in _ORDER and _ORDER[got_kind] <= _ORDER[want_kind]:
        return SAFE
    return UNSAFE


# Why a cast is applied, as the notes about it say.
_WHY = {SAFE: "a safe cast", INTEGRAL: "whole numbers, checked",
        NARROWING: "each value checked to be in its range"}
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
    why = _WHY[cast_kind(got, want)]
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


def _range_refusal(where, input_description, dtype):
    info = np.iinfo(dtype.as_numpy_dtype)
    return f"{where}: input {input_description} holds integers from {info.min} to {info.max}; got"


def _range_fix(got):
    return (f"A cast would wrap the value around. Declare the input as {tf.as_dtype(got).name} "
            f"(or another dtype that holds it) in inputs(), or bring the values into that range "
            f"in the data.")


def check_integer_range(values, dtype, where, input_description):
    """``values`` (integers) cast to the narrower integer ``dtype``, or ValueError naming
    ``where``, the input, the dtype's range and a value outside it.

    Example:
        >>> check_integer_range(np.array([1, 2]), tf.uint8, "FeedInput datapoint 0", "y")
        array([1, 2], dtype=uint8)
    """
    dtype = tf.as_dtype(dtype)
    values = np.asarray(values)
    bad = out_of_range_value(values, dtype.as_numpy_dtype)
    if bad is not None:
        raise ValueError(f"{_range_refusal(where, input_description, dtype)} {bad}. "
                         f"{_range_fix(values.dtype)}")
    return values.astype(dtype.as_numpy_dtype)


def range_checked_cast(tensor, dtype, where, input_description, name=None):
    """``tensor`` (integers) cast to the narrower integer ``dtype`` in the graph, after an
    assertion that fails, naming the input, the dtype's range and a value outside it, when the
    cast would wrap a value around. Two reductions and one comparison of scalars per run.

    Example:
        >>> label = range_checked_cast(element[1], tf.int32, "DatasetInput", "label: int32 ()")
    """
    dtype = tf.as_dtype(dtype)
    got = np.iinfo(tensor.dtype.as_numpy_dtype)
    want = np.iinfo(dtype.as_numpy_dtype)
    low = tf.constant(max(got.min, want.min), tensor.dtype)
    high = tf.constant(min(got.max, want.max), tensor.dtype)
    smallest, largest = tf.reduce_min(tensor), tf.reduce_max(tensor)
    outside = tf.where(smallest < low, smallest, largest)
    check = tf.debugging.Assert(
        tf.math.logical_and(smallest >= low, largest <= high),
        [_range_refusal(where, input_description, dtype), tf.strings.as_string(outside),
         _range_fix(tensor.dtype)])
    with tf.control_dependencies([check]):
        return tf.cast(tensor, dtype, name=name)
