"""ModelExporter: a frozen GraphDef and a SavedModel, loaded where only TensorFlow is imported."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from support import make_regression_data, scaled_timeout

import tfloop
from tfloop.compat import tf, tfv1

W = np.array([[0.5, 1.0], [-1.0, 0.25], [2.0, -0.5]], np.float32)
B = np.array([0.1, -0.2], np.float32)


class Model(tfloop.ModelDesc):
    """A dense layer with a constant subgraph to fold, two outputs, and a training-only branch."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        w = tfv1.get_variable("fc/W", [3, 2])
        b = tfv1.get_variable("fc/b", [2])
        scale = tf.sqrt(tf.constant(16.0)) / tf.constant(4.0)
        logits = tf.add(tf.matmul(x, w * scale), b, name="logits")
        tf.nn.softmax(logits, name="prob")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")


def config(**kwargs):
    kwargs.setdefault("input_names", ["x"])
    kwargs.setdefault("output_names", ["prob", "logits"])
    return tfloop.PredictConfig(model=Model(), session_init={"fc/W": W, "fc/b": B}, **kwargs)


# Runs in a fresh interpreter that imports TensorFlow only (tfloop must stay unimported).
LOADER = r"""
import json, sys
import numpy as np
import tensorflow as tf
pb, saved, signature, tag = sys.argv[1:5]
x = np.load(sys.argv[5])
graph_def = tf.compat.v1.GraphDef()
with open(pb, "rb") as f:
    graph_def.ParseFromString(f.read())
graph = tf.Graph()
with graph.as_default():
    tf.compat.v1.import_graph_def(graph_def, name="")
with tf.compat.v1.Session(graph=graph) as sess:
    compact = sess.run(["prob:0", "logits:0"], {"x:0": x})
loaded = tf.saved_model.load(saved, tags=tag.split(","))
fn = loaded.signatures[signature]
out = fn(x=tf.constant(x))
json.dump({"compact": [a.tolist() for a in compact],
           "serving": [out["prob"].numpy().tolist(), out["logits"].numpy().tolist()],
           "inputs": sorted(fn.structured_input_signature[1]),
           "ops": sorted({n.op for n in graph_def.node}),
           "tfloop_imported": any(m.startswith("tfloop") for m in sys.modules)}, sys.stdout)
"""


@pytest.mark.slow
def test_both_exports_match_the_predictor_in_a_process_without_tfloop(tmp_path):
    x, _ = make_regression_data(7, seed=9)
    np.save(tmp_path / "x.npy", x)
    expected = tfloop.OfflinePredictor(config())(x)
    exporter = tfloop.ModelExporter(config())
    exporter.export_compact(str(tmp_path / "out" / "model.pb"))
    exporter.export_serving(str(tmp_path / "serving" / "1"), signature_name="predict",
                            tags=["serve", "gpu"])
    assert sorted(os.listdir(tmp_path / "serving" / "1")) == ["saved_model.pb", "variables"]
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(tmp_path / "out" / "model.pb"),
         str(tmp_path / "serving" / "1"), "predict", "serve,gpu", str(tmp_path / "x.npy")],
        capture_output=True, text=True, timeout=scaled_timeout(40), cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["tfloop_imported"] is False
    assert result["inputs"] == ["x"]
    for got in (result["compact"], result["serving"]):
        for g, want in zip(got, expected):
            np.testing.assert_allclose(np.array(g), want, rtol=1e-6, atol=1e-6)
    # Frozen and folded: no variables, no training branch, the constant scale computed away.
    assert result["ops"] == ["AddV2", "Const", "MatMul", "Placeholder", "Softmax"]


def test_serving_export_has_the_signature_tf_serving_reads(tmp_path):
    tfloop.ModelExporter(config()).export_serving(str(tmp_path / "m"))
    graph = tf.Graph()
    with tfv1.Session(graph=graph) as sess:
        meta = tfv1.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))
        signature = meta.signature_def["serving_default"]
        assert signature.method_name == "tensorflow/serving/predict"
        assert sorted(signature.inputs) == ["x"]
        assert sorted(signature.outputs) == ["logits", "prob"]
        x, _ = make_regression_data(2)
        prob = sess.run(signature.outputs["prob"].name, {signature.inputs["x"].name: x})
    np.testing.assert_allclose(prob, tfloop.OfflinePredictor(config())(x)[0], rtol=1e-6)


def test_compact_export_without_folding_keeps_the_constant_subgraph(tmp_path):
    tfloop.ModelExporter(config()).export_compact(str(tmp_path / "m.pb"), optimize=False)
    graph_def = tfv1.GraphDef()
    graph_def.ParseFromString((tmp_path / "m.pb").read_bytes())
    ops = {n.op for n in graph_def.node}
    assert "Sqrt" in ops and "VarHandleOp" not in ops and "SparseSoftmaxCrossEntropyWithLogits" \
        not in ops


def test_export_errors(tmp_path):
    target = tmp_path / "busy"
    target.mkdir()
    (target / "old.txt").write_text("x")
    exporter = tfloop.ModelExporter(config())
    with pytest.raises(FileExistsError, match="busy exists and is not an empty directory"):
        exporter.export_serving(str(target))
    assert (target / "old.txt").read_text() == "x"
    with pytest.raises(IsADirectoryError, match="give a file name"):
        exporter.export_compact(str(target))
    with pytest.raises(TypeError, match="needs a PredictConfig"):
        tfloop.ModelExporter(Model())
    with pytest.raises(KeyError, match="no tensor named 'probs'"):
        tfloop.ModelExporter(config(output_names=["probs"])).export_compact(str(tmp_path / "a.pb"))
    empty = tmp_path / "empty"
    empty.mkdir()
    tfloop.ModelExporter(config()).export_serving(str(empty))
    assert (empty / "saved_model.pb").exists()
