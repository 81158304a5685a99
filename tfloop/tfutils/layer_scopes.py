"""Which layer built an op: every registered layer records its name scope in its graph, and an
op's name finds the innermost layer around it (for a message about an op, such as one that
TFLite's converter lacks)."""
import weakref

from tfloop.compat import tfv1

__all__ = ["record_layer_scope", "layer_of_op"]

_SCOPES = weakref.WeakKeyDictionary()   # graph -> {name scope: layer type}


def record_layer_scope(layer_type):
    """Record that the current name scope of the default graph is a layer of ``layer_type``.

    Example:
        >>> with tfv1.variable_scope("conv0"):
        ...     record_layer_scope("Conv2D")
    """
    graph = tfv1.get_default_graph()
    _SCOPES.setdefault(graph, {})[graph.get_name_scope()] = layer_type


def layer_of_op(graph, op_name):
    """``(name scope, layer type)`` of the innermost layer whose scope holds ``op_name``, or
    None when no layer of ``graph`` does."""
    scopes = _SCOPES.get(graph, {})
    parts = op_name.split("/")[:-1]
    for end in range(len(parts), 0, -1):
        scope = "/".join(parts[:end])
        if scope in scopes:
            return scope, scopes[scope]
    return None
