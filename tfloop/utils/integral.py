"""Floats for integer inputs: TensorFlow 1's feed cast them; tfloop takes them when no value
changes.

A float array may reach an integer input when each value is a whole number the integer dtype can
hold (``1.0`` for an ``int32`` label, a 0/1 edge map of floats); a fraction, ``nan``, ``inf`` or a
value out of the dtype's range would change in the cast and is refused by the caller, naming it.
"""
import numpy as np

__all__ = ["first_changed_value", "integer_bounds"]


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
