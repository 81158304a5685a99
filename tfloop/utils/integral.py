"""Numbers for integer inputs of another dtype: taken when no value changes in the cast.

A float array may reach an integer input when each value is a whole number the integer dtype can
hold (``1.0`` for an ``int32`` label, a 0/1 edge map of floats), as TensorFlow 1's feed took it;
a fraction, ``nan``, ``inf`` or a value out of the dtype's range would change in the cast and is
refused by the caller, naming it. An integer array may reach a narrower integer input (int64
labels for an ``int32`` input) when every value is in the narrower dtype's range: a cast would
wrap the others around (300 to ``uint8`` is 44).
"""
import numpy as np

__all__ = ["first_changed_value", "integer_bounds", "out_of_range_value"]


def integer_bounds(dtype):
    """``(low, high)``: a float ``x`` fits the integer ``dtype`` when ``low <= x < high``.

    ``high`` is the dtype's maximum plus one, a power of two that every float type represents
    exactly (whereas ``float(2**63 - 1)`` rounds up to ``2**63``, which int64 cannot hold).

    Example:
        >>> integer_bounds(np.int8)
        (-128.0, 128.0)
    """
    info = np.iinfo(dtype)
    return float(info.min), 2.0 ** (info.bits - (1 if info.min < 0 else 0))


def first_changed_value(values, dtype):
    """The first of the float ``values`` that a cast to the integer ``dtype`` would change (a
    fraction, ``nan``, ``inf``, out of range), or None when every value is a whole number in range.

    Example:
        >>> first_changed_value(np.array([1.0, 0.5]), np.int32)
        0.5
    """
    flat = np.asarray(values).ravel()
    low, high = integer_bounds(dtype)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(flat) & (flat == np.round(flat)) & (flat >= low) & (flat < high)
    bad = flat[~ok]
    return bad[0].item() if bad.size else None


def out_of_range_value(values, dtype):
    """A value of the integer ``values`` that the integer ``dtype`` cannot hold (the smallest
    when it is below the range, else the largest), as a Python int, or None when all fit.

    Example:
        >>> out_of_range_value(np.array([1, 300, -1]), np.uint8)
        -1
    """
    arr = np.asarray(values)
    if arr.size == 0:
        return None
    info = np.iinfo(dtype)
    smallest, largest = int(arr.min()), int(arr.max())
    if smallest < info.min:
        return smallest
    if largest > info.max:
        return largest
    return None
