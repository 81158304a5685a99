"""The containers of a fetch structure, rebuilt as ``Session.run`` rebuilds them.

``Session.run`` answers a list (or a list subclass) with a list, a tuple with a tuple, any other
tuple (a named tuple) with ``type(fetches)(*values)``, a dict (an ``OrderedDict``, a
``defaultdict`` with its default factory, any other dict subclass) with the same type, and keeps
the keys' order. Whoever copies a structure of fetches (resolving names) or rebuilds its results
(the flat fetch of :class:`~tfloop.tfutils.hooked_session.HookedSession`) goes through here, so
that a callback gets back exactly the structure it asked for.
"""
import collections
import collections.abc
import functools

__all__ = ["sequence_builder", "mapping_builder", "map_fetches"]


def sequence_builder(fetches):
    """The function that makes, from a list of values, the sequence that ``Session.run`` answers
    for the list or tuple ``fetches``.

    Example:
        >>> Pair = collections.namedtuple("Pair", ["a", "b"])
        >>> sequence_builder(Pair(x, y))([1.0, 2.0])
        Pair(a=1.0, b=2.0)
    """
    if isinstance(fetches, list):
        return list
    cls = type(fetches)
    if cls is tuple:
        return tuple
    return functools.partial(_unpacked_into, cls)


def _unpacked_into(cls, values):
    return cls(*values)


def mapping_builder(fetches):
    """The function that makes, from a list of ``(key, value)`` pairs, the mapping that
    ``Session.run`` answers for the mapping ``fetches``.

    Example:
        >>> mapping_builder(collections.OrderedDict(b=x, a=y))([("b", 1.0), ("a", 2.0)])
        OrderedDict({'b': 1.0, 'a': 2.0})
    """
    if isinstance(fetches, collections.defaultdict):
        return functools.partial(collections.defaultdict, fetches.default_factory)
    return type(fetches)


def map_fetches(fn, fetches):
    """``fetches`` with ``fn`` applied to each leaf (anything but a list, tuple or mapping), in
    containers of the types that ``Session.run`` would answer with.

    Example:
        >>> map_fetches(graph.get_tensor_by_name, {"cost": ("cost:0",)})
        {'cost': (<tf.Tensor 'cost:0' ...>,)}
    """
    if isinstance(fetches, (list, tuple)):
        return sequence_builder(fetches)([map_fetches(fn, f) for f in fetches])
    if isinstance(fetches, collections.abc.Mapping):
        return mapping_builder(fetches)([(k, map_fetches(fn, v)) for k, v in fetches.items()])
    return fn(fetches)
