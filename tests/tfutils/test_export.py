"""ModelExporter: a frozen GraphDef and a SavedModel, loaded where only TensorFlow is imported."""
import errno
import json
import os
import signal
import subprocess
import sys
import textwrap

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
served = loaded.serve(x)
json.dump({"compact": [a.tolist() for a in compact],
           "serving": [out["prob"].numpy().tolist(), out["logits"].numpy().tolist()],
           "serve": [served["prob"].numpy().tolist(), served["logits"].numpy().tolist()],
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
    assert sorted(os.listdir(tmp_path / "serving" / "1")) == [
        "assets", "fingerprint.pb", "saved_model.pb", "variables"]
    out = subprocess.run(
        [sys.executable, "-c", LOADER, str(tmp_path / "out" / "model.pb"),
         str(tmp_path / "serving" / "1"), "predict", "serve,gpu", str(tmp_path / "x.npy")],
        capture_output=True, text=True, timeout=scaled_timeout(40), cwd=tmp_path,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=""))
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["tfloop_imported"] is False
    assert result["inputs"] == ["x"]
    for got in (result["compact"], result["serving"], result["serve"]):
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


def load_frozen(path):
    graph_def = tfv1.GraphDef()
    graph_def.ParseFromString(path.read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tfv1.import_graph_def(graph_def, name="")
    return graph


@pytest.mark.parametrize("optimize", [True, False])
def test_compact_export_keeps_an_input_no_output_needs(tmp_path, optimize):
    # By default the inputs are the model's: x and the label, which only the cost reads.
    tfloop.ModelExporter(config(input_names=None)).export_compact(str(tmp_path / "m.pb"),
                                                                   optimize=optimize)
    graph = load_frozen(tmp_path / "m.pb")
    assert graph.get_operation_by_name("label").type == "Placeholder"
    x, _ = make_regression_data(3)
    expected = tfloop.OfflinePredictor(config(input_names=None))(x, np.zeros(3, np.int32))
    with tfv1.Session(graph=graph) as sess:
        got = sess.run(["prob:0", "logits:0"], {"x:0": x, "label:0": np.zeros(3, np.int32)})
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=1e-6)


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


class Big(tfloop.ModelDesc):
    """One 256x256 variable: 256 KiB of weights."""

    def inputs(self):
        return [tf.TensorSpec([None, 256], tf.float32, "x")]

    def build_graph(self, x):
        tf.matmul(x, tfv1.get_variable("w", [256, 256]), name="out")
        return tf.reduce_mean(x)


@pytest.fixture
def small_disk(tmp_path):
    """A 64 KiB tmpfs (tests run as root; skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_a_full_disk_is_said_so_naming_the_path(small_disk):
    exporter = tfloop.ModelExporter(tfloop.PredictConfig(
        model=Big(), session_init={"w": np.ones((256, 256), np.float32)}, input_names=["x"],
        output_names=["out"]))
    for export, target in ((exporter.export_serving, small_disk / "1"),
                           (exporter.export_compact, small_disk / "m.pb")):
        with pytest.raises(OSError, match=f"no space left on the device holding {target}; "
                                          "free some space there or export elsewhere") as e:
            export(str(target))
        assert e.value.errno == errno.ENOSPC
    assert os.listdir(small_disk) == []


def _dead_pid():
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_the_next_export_removes_what_a_killed_export_left(tmp_path):
    stale = tmp_path / f".1.partial-{_dead_pid()}-0123456789ab"
    live = tmp_path / f".1.partial-{os.getpid()}-0123456789ab"    # another export, running
    for directory in (stale, live):
        (directory / "variables").mkdir(parents=True)
    tfloop.ModelExporter(config()).export_serving(str(tmp_path / "1"))
    assert sorted(os.listdir(tmp_path)) == [live.name, "1"]


SIGTERM_DURING_EXPORT = r"""
import os, signal
import numpy as np
import tfloop
from tfloop.compat import tf, tfv1

class Model(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x")]

    def build_graph(self, x):
        tf.matmul(x, tfv1.get_variable("w", [3, 2]), name="out")
        return tf.reduce_mean(x)

def signalled_after(save):
    def save_then_a_sigterm(*args, **kwargs):
        result = save(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGTERM)
        return result
    return save_then_a_sigterm

PATCH
tfloop.ModelExporter(tfloop.PredictConfig(
    model=Model(), session_init={"w": np.ones((3, 2), np.float32)}, input_names=["x"],
    output_names=["out"])).export_serving("export/1")
print("not reached")
"""
# Where the signal comes: once TF1's SavedModel is written in the scratch directory, or once
# TF2's is written in the hidden directory; either way before the export is renamed into place.
PATCHES = {"tf1": "tfv1.saved_model.Builder.save = signalled_after(tfv1.saved_model.Builder.save)",
           "tf2": "tf.saved_model.save = signalled_after(tf.saved_model.save)"}


@pytest.mark.slow
@pytest.mark.parametrize("stage", sorted(PATCHES))
def test_sigterm_during_an_export_leaves_no_partial_directory(tmp_path, stage):
    (tmp_path / "export").mkdir()
    (tmp_path / "tmp").mkdir()
    script = textwrap.dedent(SIGTERM_DURING_EXPORT).replace("PATCH", PATCHES[stage])
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=scaled_timeout(60),
                          env=dict(os.environ, TMPDIR=str(tmp_path / "tmp")))
    assert done.returncode == -signal.SIGTERM, done.stderr[-3000:]
    assert "not reached" not in done.stdout
    assert os.listdir(tmp_path / "export") == []
    # Nor the scratch TF1 SavedModel (TensorFlow's own autograph files may stay).
    assert [name for name in os.listdir(tmp_path / "tmp") if name.startswith("tfloop")] == []
