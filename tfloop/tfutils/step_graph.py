"""What a training step's graph computes, read from the graph before it runs.

Two choices of the trainers depend on it (``docs/design.md``, "The step's graph"):

* gradients are colocated with their forward ops only when the model placed one of the ops
  between its variables and its cost on a device (:func:`colocate_gradients`): colocation
  attributes keep grappler from merging equal gradient ops;
* the cost is recorded with every step only when computing it reads no variable that the update
  does not read anyway (:func:`variable_reads_beyond`).
"""
from tfloop.compat import tf

__all__ = ["ancestors", "ops_between", "colocate_gradients", "variable_reads_beyond"]

# Ops whose output is a variable's value (a resource variable's read, a reference variable).
_VARIABLE_VALUE_OPS = frozenset(["ReadVariableOp", "VariableV2", "Variable"])


def _is_variable_value(tensor):
    op = tensor.op
    if op.type == "Identity":      # a reference variable's read (``w/read``)
        op = op.inputs[0].op
    return op.type in _VARIABLE_VALUE_OPS


def _as_ops(targets):
    ops = []
    for t in targets:
        op = t.op if isinstance(t, (tf.Tensor, tf.Variable)) else t
        if not isinstance(op, tf.Operation):
            raise TypeError(f"Expected tf.Tensor, tf.Variable or tf.Operation, got {t!r}.")
        ops.append(op)
    return ops


def ancestors(targets, control_inputs=True):
    """The ops that a run of ``targets`` (tensors, variables or ops) runs, themselves included.

    Args:
        targets (list): tensors, variables or ops.
        control_inputs (bool): follow control inputs too (what runs), not only data inputs
            (what the values are computed from).

    Example:
        >>> train_op in ancestors([train_op])
        True
    """
    seen = set()
    todo = _as_ops(targets)
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        todo.extend(t.op for t in op.inputs)
        if control_inputs:
            todo.extend(op.control_inputs)
    return seen


def ops_between(variables, target):
    """The ops on a data path from one of ``variables`` to ``target``: the ops that the gradients
    of ``target`` with respect to ``variables`` go through.

    Example:
        >>> sorted(op.type for op in ops_between([w], cost))   # cost = tf.reduce_sum(w * 2.0)
        ['Mul', 'ReadVariableOp', 'Sum', 'VarHandleOp']
    """
    behind = ancestors([target], control_inputs=False)
    seen = set()
    todo = [op for op in _as_ops(variables) if op in behind]
    while todo:
        op = todo.pop()
        if op in seen:
            continue
        seen.add(op)
        todo.extend(c for out in op.outputs for c in out.consumers() if c in behind)
    return seen


def colocate_gradients(cost, variables):
    """The ``colocate_gradients_with_ops`` for ``compute_gradients(cost, variables)``: True when
    the model placed an op between ``variables`` and ``cost`` on a device (``tf.device``), so
    that each gradient runs where its op does; False otherwise, where the placer puts the
    gradients as it puts their ops anyway, and grappler can merge equal gradient ops (it never
    merges ops colocated with different ops).

    Example:
        >>> opt.compute_gradients(cost, colocate_gradients_with_ops=colocate_gradients(
        ...     cost, tf.compat.v1.trainable_variables()))
    """
    return any(op.device for op in ops_between(variables, cost))


def variable_reads_beyond(tensor, train_op):
    """The ops that computing ``tensor`` adds to a run of ``train_op`` and that take a variable's
    value as an input: work on the model's variables that the update does not need (a cost linear
    in the variables, a weight-decay term). Empty when ``tensor`` only adds ops on values the
    update computes anyway (e.g. the mean of a loss whose gradient needs the loss' inputs).

    Example:
        >>> [op.name for op in variable_reads_beyond(cost, train_op)]   # cost = reduce_sum(w * s)
        ['mul']
    """
    needed = ancestors([train_op])
    return sorted((op for op in ancestors([tensor]) - needed
                   if any(_is_variable_value(t) for t in op.inputs)),
                  key=lambda op: op.name)
