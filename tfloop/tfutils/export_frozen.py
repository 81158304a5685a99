"""A frozen GraphDef: constant subgraphs folded, only what the outputs (and kept nodes) need."""
import numpy as np

from tfloop.compat import tf, tfv1

__all__ = ["fold_constants", "prune"]

_INPUT_OPS = frozenset(["Placeholder", "PlaceholderWithDefault", "PlaceholderV2"])


def fold_constants(graph_def, keep, outputs):
    """Replace every single-output, stateless subgraph that depends on no input by a constant,
    then keep only what ``outputs`` need (and the ``keep`` nodes)."""
    graph = tf.Graph()
    with graph.as_default():
        tfv1.import_graph_def(graph_def, name="")
    foldable = set()
    for op in graph.get_operations():
        if op.type in _INPUT_OPS or op.op_def.is_stateful or len(op.outputs) != 1 or \
                op.outputs[0].dtype in (tf.resource, tf.variant, tf.string):
            continue
        if all(t.op.name in foldable for t in op.inputs) and \
                all(c.name in foldable for c in op.control_inputs):
            foldable.add(op.name)
    needed = set(outputs)
    for op in graph.get_operations():
        if op.name not in foldable:
            needed.update(t.op.name for t in op.inputs if t.op.name in foldable)
    to_fold = sorted(n for n in needed if n in foldable and
                     graph.get_operation_by_name(n).type != "Const")
    values = {}
    if to_fold:
        with tfv1.Session(graph=graph) as sess:
            values = dict(zip(to_fold, sess.run([graph.get_tensor_by_name(n + ":0")
                                                 for n in to_fold])))
    folded = tfv1.GraphDef()
    folded.versions.CopyFrom(graph_def.versions)
    folded.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        if node.name in values:
            value = np.asarray(values[node.name])
            const = folded.node.add(name=node.name, op="Const")
            const.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
            const.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))
        else:
            folded.node.add().CopyFrom(node)
    return prune(folded, list(outputs) + list(keep))


def prune(graph_def, roots):
    nodes = {node.name: node for node in graph_def.node}
    reachable, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in reachable:
            continue
        reachable.add(name)
        for dep in nodes[name].input:
            stack.append(dep.lstrip("^").split(":")[0])
    pruned = tfv1.GraphDef()
    pruned.versions.CopyFrom(graph_def.versions)
    pruned.library.CopyFrom(graph_def.library)
    pruned.node.extend(node for node in graph_def.node if node.name in reachable)
    return pruned
