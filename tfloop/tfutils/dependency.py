"""Whether running some tensors or ops runs a given op (a hook that should act only with the
steps that run it)."""
from tfloop.compat import tf

__all__ = ["dependency_of_targets", "dependency_of_fetches"]


def _as_op(x):
    op = x.op if isinstance(x, (tf.Tensor, tf.Variable)) else x
    if not isinstance(op, tf.Operation):
        raise TypeError(f"Expected a tf.Tensor or tf.Operation, got {x!r}.")
    return op


def dependency_of_targets(targets, op):
    """Whether ``op`` runs when any of ``targets`` (tensors or ops) does: it is one of them or
    one of their inputs or control inputs, transitively.

    Example:
        >>> dependency_of_targets([train_op], update_op)
        True
    """
    op = _as_op(op)
    seen, todo = set(), [_as_op(t) for t in targets]
    while todo:
        current = todo.pop()
        if current is op:
            return True
        if current in seen:
            continue
        seen.add(current)
        todo.extend(t.op for t in current.inputs)
        todo.extend(current.control_inputs)
    return False


def _flat_targets(fetches):
    if isinstance(fetches, dict):
        return [t for v in fetches.values() for t in _flat_targets(v)]
    if isinstance(fetches, (list, tuple)):
        return [t for v in fetches for t in _flat_targets(v)]
    return [] if fetches is None else [fetches]


def dependency_of_fetches(fetches, op):
    """:func:`dependency_of_targets` for what ``session.run`` takes: a tensor, an op, a tensor's
    name, or lists, tuples and dicts of them.

    Example:
        >>> dependency_of_fetches({"cost": cost, "ops": [train_op]}, update_op)
    """
    op = _as_op(op)
    targets = [op.graph.as_graph_element(t) for t in _flat_targets(fetches)]
    return dependency_of_targets(targets, op)
