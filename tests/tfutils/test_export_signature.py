"""A serving signature takes what serving sends: by default the model inputs its outputs depend
on (a label only the cost reads is left out, and the log says so); input names given are taken as
given, and an output that needs a model input not among them is an error naming both."""
import numpy as np
import pytest

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.export_signature import needed_placeholders

W = np.array([[0.5, 1.0], [-1.0, 0.25], [2.0, -0.5]], np.float32)


class TwoHeads(tfloop.ModelDesc):
    """``prob`` reads x; ``scaled`` reads x and scale; the label reaches only the cost."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label"),
                tf.TensorSpec([None, 1], tf.float32, "scale")]

    def build_graph(self, x, label, scale):
        logits = tf.matmul(x, tfv1.get_variable("W", [3, 2]), name="logits")
        tf.nn.softmax(logits, name="prob")
        tf.multiply(logits, scale, name="scaled")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")


def exporter(output_names, input_names=None):
    return tfloop.ModelExporter(tfloop.PredictConfig(
        model=TwoHeads(), session_init={"W": W}, output_names=output_names,
        input_names=input_names))


def signature_inputs(directory):
    loaded = tf.saved_model.load(str(directory))
    return sorted(loaded.signatures["serving_default"].structured_input_signature[1])


def test_by_default_the_inputs_are_those_the_outputs_depend_on(tmp_path, log_lines):
    export = exporter(["prob"])
    export.export_serving(str(tmp_path / "prob"))
    assert signature_inputs(tmp_path / "prob") == ["x"]
    assert export.left_out_inputs == ["label", "scale"]
    assert ("export_serving: the input(s) label, scale are left out of the signature: no output "
            "(prob) depends on them. Give input_names (--input-names) to keep them.") in log_lines
    export = exporter(["prob", "scaled"])
    export.export_serving(str(tmp_path / "both"))
    assert signature_inputs(tmp_path / "both") == ["scale", "x"]
    assert export.left_out_inputs == ["label"]
    assert export.serving_signature() == (["x", "scale"], ["prob", "scaled"])


def test_input_names_given_are_kept_even_unused(tmp_path):
    export = exporter(["prob"], input_names=["x", "label"])
    export.export_serving(str(tmp_path / "m"))
    assert signature_inputs(tmp_path / "m") == ["label", "x"]
    assert export.left_out_inputs == []


def test_an_output_needing_an_input_not_given_is_an_error_naming_both(tmp_path):
    with pytest.raises(ValueError, match=r"export_serving: the output 'scaled' depends on the "
                                         r"input 'scale', which is not among input_names "
                                         r"\['x'\]\. Add 'scale' to input_names"):
        exporter(["prob", "scaled"], input_names=["x"]).export_serving(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="export_compact: the output 'prob' depends on the input "
                                         "'x', which is not among input_names"):
        exporter(["prob"], input_names=["label"]).export_compact(str(tmp_path / "m.pb"))
    assert not (tmp_path / "m").exists() and not (tmp_path / "m.pb").exists()


def test_an_intermediate_tensor_given_as_input_replaces_what_is_behind_it(tmp_path):
    export = exporter(["prob"], input_names=["logits"])
    export.export_serving(str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    logits = np.array([[0.0, np.log(3.0)]], np.float32)
    np.testing.assert_allclose(loaded.serve(logits)["prob"].numpy(), [[0.25, 0.75]], rtol=1e-6)


def test_needed_placeholders_stop_at_fed_tensors_and_skip_defaults():
    with tf.Graph().as_default():
        a = tfv1.placeholder(tf.float32, [None], "a")
        b = tfv1.placeholder(tf.float32, [None], "b")
        rate = tfv1.placeholder_with_default(2.0, [], "rate")
        mid = tf.multiply(a, rate, name="mid")
        out = tf.add(mid, b, name="out")
        with tf.control_dependencies([tfv1.placeholder(tf.float32, [], "gate")]):
            gated = tf.identity(a, name="gated")
        assert [op.name for op in needed_placeholders(out, [])] == ["a", "b"]
        assert [op.name for op in needed_placeholders(out, [mid])] == ["b"]
        assert [op.name for op in needed_placeholders(gated, [])] == ["a", "gate"]
