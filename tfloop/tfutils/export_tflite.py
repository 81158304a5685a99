"""An export converted by TFLite's converter; an op it cannot convert is named with the layer
that built it."""
import re

from tfloop.compat import tf
from tfloop.tfutils.layer_scopes import layer_of_op

__all__ = ["convert_to_tflite"]

# TFLite names each op it cannot convert with the node's name in its location:
# loc(fused["Igamma:", "odd/Igamma"]) or, in a function, "odd/Igamma@__inference_serve_42".
_UNCONVERTED = re.compile(r"""loc\((?:callsite\()*fused\["[^"]*", "([^"@]+)(?:@[^"]*)?"\].*?"""
                          r"""'tf\.(\w+)' op is neither a custom op nor a flex op""")


def _unconverted_ops(message):
    """``{node name: op type}`` of the ops TFLite's message says it cannot convert."""
    return {node: op_type for node, op_type in _UNCONVERTED.findall(message)}


def _where(graph, node):
    layer = layer_of_op(graph, node)
    if layer is None:
        return f"{node}, outside any layer"
    scope, layer_type = layer
    return f"{node}, in the layer {scope!r} ({layer_type})"


def _with_layers(error, graph):
    """``error``, of TFLite's converter, again with a first line naming each op it cannot
    convert and the layer of ``graph`` that built it; ``error`` itself when it names no op."""
    message = str(error)
    ops = _unconverted_ops(message)
    if not ops:
        return error
    listed = "; ".join(f"{op_type} ({_where(graph, node)})" for node, op_type in ops.items())
    explained = type(error)(
        f"TFLite's converter cannot convert the op(s) {listed}. select_tf_ops=True (tfloop "
        f"export --format tflite --select-tf-ops) keeps the TensorFlow ops that TFLite's Flex "
        f"delegate runs (the runtime must link it); an op it lacks too must be computed "
        f"otherwise in that layer. TFLite's message:\n{message}")
    explained.errors = getattr(error, "errors", [])
    return explained


def convert_to_tflite(saved_model_dir, signature_name, graph, select_tf_ops=False):
    """The TFLite flatbuffer of a SavedModel's signature.

    Args:
        saved_model_dir (str): the SavedModel.
        signature_name (str): its signature to convert.
        graph (tf.Graph): the graph it was exported from, whose layers name the ops TFLite cannot
            convert.
        select_tf_ops (bool): let TFLite run ops it lacks as TensorFlow kernels.

    Returns:
        bytes: the model.

    Raises:
        ConverterError: TFLite's, its message beginning with the ops it cannot convert and the
            layers that built them.
    """
    converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir,
                                                         signature_keys=[signature_name])
    if select_tf_ops:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS,
                                               tf.lite.OpsSet.SELECT_TF_OPS]
    try:
        return converter.convert()
    except Exception as e:
        explained = _with_layers(e, graph)
        if explained is e:
            raise
        raise explained from None
