"""TensorFlow's op types of the nodes of a graph that ran, the same on every CPU, oneDNN on or off.

What runs is not what was built. With oneDNN on, TensorFlow gives the nodes it runs with oneDNN's
kernels other op names (``Conv2D`` runs as ``_MklNativeConv2D``, ``MatMul`` as ``_MklMatMul``) for
the dtypes this CPU's oneDNN computes: float32 on every x86 CPU, bfloat16 from AVX512 on, float16
on CPUs with AVX512-FP16 or AMX-FP16. Its graph optimizer also fuses ops into one node where the
kernels allow (a ``FusedBatchNormV3`` and the ``Relu`` after it into ``_FusedBatchNormEx``, a
``MatMul`` and its ``BiasAdd`` into ``_FusedMatMul``). So the node names of a step depend on the
CPU class; the op types :func:`op_types` gives for them do not. Count those.

The graph built in Python (``graph.get_operations()``) is never rewritten: its ``op.type`` is
what the code built, on every CPU.
"""
import collections

_ONEDNN_PREFIXES = ("_MklNative", "_Mkl")
# A fused contraction: the op it contracts with, followed by its ``fused_ops`` attribute.
_FUSED_CONTRACTIONS = {
    "_FusedConv2D": "Conv2D", "FusedConv2D": "Conv2D",
    "_FusedConv3D": "Conv3D", "FusedConv3D": "Conv3D",
    "_FusedDepthwiseConv2dNative": "DepthwiseConv2dNative",
    "FusedDepthwiseConv2dNative": "DepthwiseConv2dNative",
    "_FusedMatMul": "MatMul", "FusedMatMul": "MatMul",
    "_FusedBatchMatMulV2": "BatchMatMulV2", "FusedBatchMatMulV2": "BatchMatMulV2",
}
# oneDNN's own fusions of two ops.
_PAIRS = {
    "Conv2DWithBias": ["Conv2D", "BiasAdd"],
    "Conv2DBackpropFilterWithBias": ["Conv2DBackpropFilter", "BiasAddGrad"],
    "PadWithConv2D": ["Pad", "Conv2D"],
}
_BATCH_NORM_EX = ("_FusedBatchNormEx", "FusedBatchNormEx")


def _without_onednn_prefix(op):
    for prefix in _ONEDNN_PREFIXES:
        if op.startswith(prefix):
            return op[len(prefix):]
    return op


def _batch_norm_ex(node):
    ops = ["FusedBatchNormV3"]
    if node.attr["num_side_inputs"].i:
        ops.append("AddV2")
    activation = node.attr["activation_mode"].s.decode()
    if activation and activation != "Identity":
        ops.append(activation)
    return ops


def op_types(node):
    """The op types a node of a graph that ran (a ``NodeDef`` of ``RunMetadata``'s partition
    graphs) computes, as the graph built them: oneDNN's names back to TensorFlow's, a fused node
    as the ops it fuses (those in its ``fused_ops`` by the names it records there).

    Example:
        >>> [op_types(n) for n in nodes]
        [['Conv2D'], ['FusedBatchNormV3', 'Relu'], ['MatMul', 'BiasAdd'], ['Cast']]
    """
    op = _without_onednn_prefix(node.op)
    if op.startswith("PadWithFused"):
        return ["Pad", _FUSED_CONTRACTIONS[op[len("PadWith"):]]] + \
            [f.decode() for f in node.attr["fused_ops"].list.s]
    if op in _FUSED_CONTRACTIONS:
        return [_FUSED_CONTRACTIONS[op]] + [f.decode() for f in node.attr["fused_ops"].list.s]
    if op in _BATCH_NORM_EX:
        return _batch_norm_ex(node)
    return list(_PAIRS.get(op, [op]))


def count_op_types(nodes):
    """A Counter of :func:`op_types` over ``nodes``."""
    return collections.Counter(op for node in nodes for op in op_types(node))
