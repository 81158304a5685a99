"""Turning a predictor's input value into what its input tensor can be fed, or a clear error.

Called by ``OnlinePredictor`` only when a value is not already of the input's numpy dtype (and,
for a ``tf.string`` input, on every value: an object array may hold anything).
"""
import numpy as np

from tfloop.utils.integral import first_changed_value, out_of_range_value

__all__ = ["convert_input_value"]

_STRING_TYPES = (bytes, str, np.bytes_, np.str_)


def convert_input_value(value, name, dtype, description, who):
    """``value`` as an array of ``dtype`` for the input ``name``, without changing any number.

    Args:
        value: what the caller gave for the input (array, list or scalar).
        name (str): the input tensor's name, for messages.
        dtype (np.dtype): the numpy dtype fed to the input (``object`` for ``tf.string``).
        description (str): the input's dtype and shape as messages show them.
        who (str): the predictor, for messages.

    Returns:
        np.ndarray: the value, cast within its kind (a float64 array to float32, bytes and str
        to an object array of bytes and str), or floats that are whole numbers cast to an
        integer input's dtype (as TensorFlow 1's feed did).

    Raises:
        TypeError: a value of another kind (floats for a string input, strings for a number
            input).
        ValueError: an integer that the input's dtype cannot hold, or a float for an integer
            input that the cast would change (a fraction, nan, inf, out of range).

    Example:
        >>> convert_input_value(["a", b"b"], "s:0", np.dtype(object), "string [None]", "P")
        array(['a', b'b'], dtype=object)
    """
    if dtype.kind == "O":
        return _as_strings(value, name, description, who)
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.dtype.kind == "f" and dtype.kind in "iu":
        return _integral(arr, name, dtype, description, who)
    if arr.dtype.kind in "USOV" or not np.can_cast(arr.dtype, dtype, "same_kind"):
        raise TypeError(f"{who}: input {name!r} expects {description}, got a value of dtype "
                        f"{arr.dtype}{_example(arr)}.")
    if dtype.kind in "iu" and arr.size:
        _check_integer_range(arr, name, dtype, description, who)
    return arr.astype(dtype, copy=False)


def _integral(arr, name, dtype, description, who):
    bad = first_changed_value(arr, dtype)
    if bad is not None:
        raise ValueError(f"{who}: input {name!r} expects {description}, got the value {bad!r}; "
                         f"it takes floats only when they are whole numbers that {dtype} can "
                         f"hold. Round the values (np.rint) if that is what you mean.")
    return arr.astype(dtype)


def _as_strings(value, name, description, who):
    if isinstance(value, np.ndarray) and value.dtype.kind in "SU":
        return value.astype(object)
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        raise _not_strings(name, description, who, f"dtype {value.dtype}{_example(value)}")
    arr = value if isinstance(value, np.ndarray) else np.array(value, dtype=object)
    for item in arr.flat:
        if not isinstance(item, _STRING_TYPES):
            raise _not_strings(name, description, who, f"{item!r} ({type(item).__name__})")
    return arr


def _not_strings(name, description, who, got):
    return TypeError(f"{who}: input {name!r} expects {description} (bytes or str values), got "
                     f"{got}; give bytes or str, e.g. np.array([b'...'], dtype=object).")


def _check_integer_range(arr, name, dtype, description, who):
    bad = out_of_range_value(arr, dtype)
    if bad is not None:
        info = np.iinfo(dtype)
        raise ValueError(f"{who}: input {name!r} expects {description}, got the value "
                         f"{bad!r}, which {dtype} cannot hold (range {info.min} to "
                         f"{info.max}); use a wider input dtype, or bring the values into range.")


def _example(arr):
    if arr.size == 0:
        return ""
    return f" (e.g. {arr.flat[0].item()!r})"
