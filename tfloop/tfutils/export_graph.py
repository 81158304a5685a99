"""Graphs built to be exported: they hold what the model computes and nothing that only the
kernels of the process building them need.

A layer that works around a kernel of this process (the empty-batch guard that convolutions and
pooling get under oneDNN, ``models/layer_args.py``) asks :func:`is_built_for_export` and leaves
the workaround out of an exported graph: that graph runs elsewhere (TF Serving, TFLite,
onnxruntime, another CPU), where the workaround is a ``tf.cond`` the deployment tools refuse.
"""
import contextlib
import weakref

from tfloop.compat import tfv1

__all__ = ["building_for_export", "is_built_for_export"]

_EXPORT_GRAPHS = weakref.WeakSet()


@contextlib.contextmanager
def building_for_export(graph):
    """Within the block, ``graph`` is being built for an export (see :func:`is_built_for_export`).

    Example:
        >>> graph = tf.Graph()
        >>> with graph.as_default(), building_for_export(graph):
        ...     build_predict_tower(tower_func, placeholders, "")
    """
    _EXPORT_GRAPHS.add(graph)
    try:
        yield
    finally:
        _EXPORT_GRAPHS.discard(graph)


def is_built_for_export(graph=None) -> bool:
    """Whether ``graph`` (the default graph when None) is being built for an export."""
    return (graph if graph is not None else tfv1.get_default_graph()) in _EXPORT_GRAPHS
