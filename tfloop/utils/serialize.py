"""tensorpack's ``utils.serialize``: ``dumps``/``loads`` between Python objects and bytes
(pickle, highest protocol; numpy arrays included).

Example:
    >>> loads(dumps({"a": [1, 2]}))
    {'a': [1, 2]}
"""
import pickle

__all__ = ["dumps", "loads"]


def dumps(obj):
    """``obj`` as bytes (pickle, highest protocol)."""
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def loads(buf):
    """The object :func:`dumps` turned into ``buf``."""
    return pickle.loads(buf)
