"""Back up graph collections and restore them: build something whose collection entries
(summaries, update ops, regularization losses) must not stay in the graph.

Example:
    >>> with freeze_collection([tf.compat.v1.GraphKeys.SUMMARIES]):
    ...     build_a_tower_whose_summaries_are_not_wanted()
"""
import contextlib

from tfloop.compat import tfv1

__all__ = ["backup_collection", "restore_collection", "freeze_collection"]


def _keys(keys):
    if keys is None:
        return tfv1.get_default_graph().get_all_collection_keys()
    if isinstance(keys, str) or not isinstance(keys, (list, tuple, set, frozenset)):
        raise TypeError(f"collection keys must be a list of collection names, got {keys!r}.")
    return list(keys)


def backup_collection(keys=None):
    """``{key: a copy of the collection's list}`` of the default graph, for ``keys`` (every
    collection of the graph by default).

    Example:
        >>> backup = backup_collection([tf.compat.v1.GraphKeys.UPDATE_OPS])
    """
    return {key: list(tfv1.get_collection(key)) for key in _keys(keys)}


def restore_collection(backup):
    """Set each collection of the default graph named in ``backup`` back to its backed-up list.

    Example:
        >>> restore_collection(backup)
    """
    for key, items in backup.items():
        ref = tfv1.get_collection_ref(key)
        ref[:] = items


@contextlib.contextmanager
def freeze_collection(keys):
    """A context after which the collections ``keys`` are as they were before it (also when
    its block raises).

    Example:
        >>> with freeze_collection([tf.compat.v1.GraphKeys.SUMMARIES]):
        ...     tf.compat.v1.summary.scalar("not_kept", x)
    """
    backup = backup_collection(keys)
    try:
        yield
    finally:
        restore_collection(backup)
