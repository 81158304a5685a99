"""``ModelExporter.export_tflite``: TFLite's converter on the export; the interpreter gives the
predictor's outputs, and an op TFLite cannot convert is named with the layer that built it."""
import numpy as np
import pytest
from export_support import ConvNet, images, initial_weights

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.layer_scopes import layer_of_op


@tfloop.layer_register()
def IncompleteGamma(x):
    """A layer whose op (Igamma) TFLite has neither as a builtin nor in its Flex delegate."""
    return tf.identity(tf.math.igamma(x, x + 1.0), name="output")


class GammaNet(tfloop.ModelDesc):
    def __init__(self, in_a_layer=True):
        self.in_a_layer = in_a_layer

    def inputs(self):
        return [tf.TensorSpec([None, 4], tf.float32, "x")]

    def build_graph(self, x):
        x = tf.abs(tfloop.FullyConnected("fc", x, 4))
        with tf.name_scope("head"):
            y = IncompleteGamma("gamma", x) if self.in_a_layer else tf.math.igamma(x, x + 1.0)
        tf.identity(y, name="out")


def run_tflite(path, **inputs):
    interpreter = tf.lite.Interpreter(model_path=str(path))
    return interpreter.get_signature_runner("serving_default")(**inputs)


@pytest.mark.slow
def test_the_tflite_model_predicts_as_the_predictor(tmp_path):
    weights = initial_weights(ConvNet())
    x, _ = images(4)
    predictor = tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=ConvNet(), session_init=weights, output_names=["prob"], input_names=["image"]))
    exporter = tfloop.ModelExporter(tfloop.PredictConfig(model=ConvNet(), session_init=weights,
                                                         output_names=["prob"]))
    exporter.export_tflite(str(tmp_path / "out" / "model.tflite"))
    np.testing.assert_allclose(run_tflite(tmp_path / "out" / "model.tflite", image=x)["prob"],
                               predictor(x)[0], atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("in_a_layer, where", [
    (True, "Igamma (head/gamma/Igamma, in the layer 'head/gamma' (IncompleteGamma))"),
    (False, "Igamma (head/Igamma, outside any layer)")])
def test_an_op_tflite_lacks_is_named_with_its_layer(tmp_path, in_a_layer, where):
    exporter = tfloop.ModelExporter(tfloop.PredictConfig(model=GammaNet(in_a_layer),
                                                         output_names=["out"]))
    for select_tf_ops in (False, True):
        with pytest.raises(Exception) as raised:
            exporter.export_tflite(str(tmp_path / "m.tflite"), select_tf_ops=select_tf_ops)
        assert type(raised.value).__name__ == "ConverterError"
        message = str(raised.value)
        assert message.startswith(f"TFLite's converter cannot convert the op(s) {where}. ")
        assert "TFLite's message:\n" in message
        assert "'tf.Igamma' op is neither a custom op nor a flex op" in message
    assert not (tmp_path / "m.tflite").exists()


def test_the_innermost_layer_holds_an_op():
    with tf.Graph().as_default() as graph:
        x = tfv1.placeholder(tf.float32, [None, 4])
        with tf.name_scope("block"):
            tfloop.FullyConnected("fc", x, 2)
    assert layer_of_op(graph, "block/fc/MatMul") == ("block/fc", "FullyConnected")
    assert layer_of_op(graph, "block/Relu") is None
    assert layer_of_op(graph, "fc/MatMul") is None
    assert layer_of_op(tf.Graph(), "block/fc/MatMul") is None
