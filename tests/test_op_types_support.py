"""op_types_support: the op types of nodes as oneDNN and TensorFlow's optimizer rename and fuse
them (the names TensorFlow 2.21's CPU kernels register), and nodes it leaves alone."""
import pytest
from op_types_support import count_op_types, op_types

from tfloop.compat import tfv1


def node(op, fused_ops=(), **ints_and_strings):
    made = tfv1.NodeDef(name="n", op=op)
    if fused_ops:
        made.attr["fused_ops"].list.s.extend(f.encode() for f in fused_ops)
    for key, value in ints_and_strings.items():
        if isinstance(value, int):
            made.attr[key].i = value
        else:
            made.attr[key].s = value.encode()
    return made


@pytest.mark.parametrize("op, expected", [
    ("Conv2D", ["Conv2D"]),
    ("_MklNativeConv2D", ["Conv2D"]),
    ("_MklConv2D", ["Conv2D"]),
    ("_MklNativeConv2DBackpropFilter", ["Conv2DBackpropFilter"]),
    ("_MklNativeFusedBatchNormV3", ["FusedBatchNormV3"]),
    ("_MklFusedBatchNormGradV3", ["FusedBatchNormGradV3"]),
    ("_MklMatMul", ["MatMul"]),
    ("_MklRelu", ["Relu"]),
    ("_MklNativeConv2DWithBias", ["Conv2D", "BiasAdd"]),
    ("_MklConv2DBackpropFilterWithBias", ["Conv2DBackpropFilter", "BiasAddGrad"]),
    ("_MklNativePadWithConv2D", ["Pad", "Conv2D"]),
    ("Cast", ["Cast"]),
    ("_XlaCompile", ["_XlaCompile"]),
    ("_Recv", ["_Recv"]),
])
def test_onednn_names_are_tensorflows(op, expected):
    assert op_types(node(op)) == expected


@pytest.mark.parametrize("op", ["_FusedMatMul", "_MklFusedMatMul", "_MklNativeFusedMatMul"])
def test_a_fused_matmul_is_the_matmul_and_what_it_fused(op):
    assert op_types(node(op, ["BiasAdd", "Relu"])) == ["MatMul", "BiasAdd", "Relu"]


@pytest.mark.parametrize("op, contraction", [
    ("_FusedConv2D", "Conv2D"), ("_MklNativeFusedConv2D", "Conv2D"),
    ("_MklNativeFusedDepthwiseConv2dNative", "DepthwiseConv2dNative"),
    ("_MklNativeFusedConv3D", "Conv3D"), ("_MklFusedBatchMatMulV2", "BatchMatMulV2"),
])
def test_a_fused_contraction_is_the_contraction_and_what_it_fused(op, contraction):
    assert op_types(node(op, ["BiasAdd"])) == [contraction, "BiasAdd"]


def test_a_padded_fused_convolution_is_the_pad_and_the_fused_ops():
    assert op_types(node("_MklNativePadWithFusedConv2D", ["BiasAdd", "Relu"])) == \
        ["Pad", "Conv2D", "BiasAdd", "Relu"]


@pytest.mark.parametrize("op", ["_FusedBatchNormEx", "_MklNativeFusedBatchNormEx"])
@pytest.mark.parametrize("side_inputs, activation, expected", [
    (0, "Relu", ["FusedBatchNormV3", "Relu"]),
    (1, "Relu", ["FusedBatchNormV3", "AddV2", "Relu"]),
    (0, "Identity", ["FusedBatchNormV3"]),
])
def test_a_batch_norm_fused_with_its_activation_is_both(op, side_inputs, activation, expected):
    assert op_types(node(op, num_side_inputs=side_inputs, activation_mode=activation)) == expected


def test_counts_add_up_over_nodes():
    nodes = [node("_MklNativeConv2D"), node("Conv2D"),
             node("_MklNativeFusedBatchNormEx", num_side_inputs=0, activation_mode="Relu"),
             node("Relu")]
    assert count_op_types(nodes) == {"Conv2D": 2, "FusedBatchNormV3": 1, "Relu": 2}
