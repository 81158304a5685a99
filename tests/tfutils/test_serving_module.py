"""ServingModule: an export as the ``tf.Module`` MLflow's tensorflow flavour takes, callable with
the signature's inputs in the export's order, saved and loaded again as a callable."""
import numpy as np
import pytest

import tfloop
from tfloop.compat import tf, tfv1

W = np.array([[1.0], [2.0], [3.0]], np.float32)
X = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]], np.float32)


class Offset(tfloop.ModelDesc):
    """``pred = x @ w + offset`` and ``double = 2 * pred``; ``offset`` comes after ``x``."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"),
                tf.TensorSpec([None], tf.float32, "offset")]

    def build_graph(self, x, offset):
        pred = tf.add(tf.squeeze(tf.matmul(x, tfv1.get_variable("w", [3, 1])), 1), offset,
                      name="pred")
        tf.multiply(pred, 2.0, name="double")


def export(directory, output_names, input_names=None):
    tfloop.ModelExporter(tfloop.PredictConfig(
        model=Offset(), session_init={"w": W}, output_names=output_names,
        input_names=input_names)).export_serving(str(directory))
    return str(directory)


def test_one_output_is_returned_as_a_tensor_several_as_a_dict(tmp_path):
    offset = np.array([0.5, -1.0], np.float32)
    single = tfloop.ServingModule(export(tmp_path / "one", ["pred"]))
    assert single.input_keys == ("x", "offset") and single.output_keys == ("pred",)
    np.testing.assert_allclose(single(X, offset).numpy(), [1.5, 5.0])
    both = tfloop.ServingModule(tf.saved_model.load(export(tmp_path / "two", ["pred", "double"])))
    out = both(X, offset)
    assert sorted(out) == ["double", "pred"]
    np.testing.assert_allclose(out["double"].numpy(), [3.0, 10.0])


def test_the_inputs_keep_the_exports_order_even_against_the_key_order(tmp_path):
    module = tfloop.ServingModule(export(tmp_path / "m", ["pred"], input_names=["offset", "x"]))
    assert module.input_keys == ("offset", "x")
    np.testing.assert_allclose(module(np.zeros(2, np.float32), X).numpy(), [1.0, 6.0])


def test_saved_and_loaded_again_it_is_callable(tmp_path):
    module = tfloop.ServingModule(export(tmp_path / "m", ["pred"]))
    tf.saved_model.save(module, str(tmp_path / "again"))
    loaded = tf.saved_model.load(str(tmp_path / "again"))
    np.testing.assert_allclose(loaded(X, np.zeros(2, np.float32)).numpy(), [1.0, 6.0])


def test_not_a_savedmodel_is_refused():
    with pytest.raises(TypeError, match="ServingModule needs a SavedModel directory or what "
                                        "tf.saved_model.load returned, got 42"):
        tfloop.ServingModule(42)
