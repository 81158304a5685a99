"""The SavedModel of an export: a TF2 SavedModel with the serving signature and a ``serve``
endpoint, in TF Serving's version layout on request, read by ``saved_model_cli`` as by
TensorFlow Serving."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from forked_python import run_python
from support import scaled_timeout

import tfloop
from tfloop.compat import tf, tfv1

W = np.array([[1.0], [2.0], [3.0]], np.float32)


def exporter(**kwargs):
    kwargs.setdefault("output_names", ["pred"])
    return tfloop.ModelExporter(tfloop.PredictConfig(
        model=PredModel(), session_init={"w": W},
        **kwargs))


class PredModel(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        pred = tf.squeeze(tf.matmul(x, tfv1.get_variable("w", [3, 1])), 1, name="pred")
        return tf.reduce_mean(tf.square(pred - y), name="cost")


X = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]], np.float32)


def test_serve_takes_the_inputs_in_order_and_returns_the_outputs_by_key(tmp_path):
    exporter(output_names=["pred", "cost"]).export_serving(str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    out = loaded.serve(X, np.array([1.0, 0.0], np.float32))
    assert sorted(out) == ["cost", "pred"]
    np.testing.assert_allclose(out["pred"].numpy(), [1.0, 6.0])
    np.testing.assert_allclose(out["cost"].numpy(), 18.0)
    signature = loaded.signatures["serving_default"]
    np.testing.assert_allclose(signature(x=tf.constant(X), y=tf.constant([1.0, 0.0]))["pred"],
                               [1.0, 6.0])


@pytest.mark.slow
def test_versions_in_tf_servings_layout(tmp_path):
    export = exporter()
    model_dir = tmp_path / "models" / "lin"
    assert export.export_serving_version(str(model_dir)) == str(model_dir / "1")
    assert export.export_serving_version(str(model_dir)) == str(model_dir / "2")
    assert export.export_serving_version(str(model_dir), 7) == str(model_dir / "7")
    (model_dir / "notes").mkdir()
    assert export.export_serving_version(str(model_dir)) == str(model_dir / "8")
    assert sorted(os.listdir(model_dir)) == ["1", "2", "7", "8", "notes"]
    assert (model_dir / "8" / "saved_model.pb").is_file()
    with pytest.raises(FileExistsError, match="lin/7 exists and is not an empty directory"):
        export.export_serving_version(str(model_dir), 7)
    for bad in (-1, "3", 1.0, True):
        with pytest.raises(ValueError, match=f"version must be an int >= 0 .*got {bad!r}"):
            export.export_serving_version(str(model_dir), bad)


def test_tags_must_hold_serve(tmp_path):
    with pytest.raises(ValueError, match=r"tags must be non-empty strings including 'serve' .*"
                                         r"got \['train'\]"):
        exporter().export_serving(str(tmp_path / "m"), tags=["train"])
    assert not (tmp_path / "m").exists()


def test_an_export_inside_another_graph_as_a_callback_makes_it(tmp_path):
    with tf.Graph().as_default():
        tfv1.placeholder(tf.float32, [], "a_trainers_graph")
        exporter().export_serving(str(tmp_path / "m"))
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    np.testing.assert_allclose(loaded.serve(X)["pred"].numpy(), [1.0, 6.0])


def saved_model_cli(*args):
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    done = subprocess.run([cli, *args], capture_output=True, text=True,
                          timeout=scaled_timeout(120),
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_saved_model_cli_shows_and_runs_the_signature(tmp_path):
    export = exporter().export_serving_version(str(tmp_path / "lin"))
    shown = saved_model_cli("show", "--dir", export, "--tag_set", "serve",
                            "--signature_def", "serving_default")
    assert "inputs['x'] tensor_info:" in shown and "inputs['y']" not in shown
    assert "outputs['pred'] tensor_info:" in shown
    assert "Method name is: tensorflow/serving/predict" in shown
    ran = saved_model_cli("run", "--dir", export, "--tag_set", "serve", "--signature_def",
                          "serving_default", "--input_exprs", "x=[[1.0,0.0,0.0],[1.0,1.0,1.0]]")
    assert "[1. 6.]" in ran


WITHOUT_EAGER = """
import numpy as np
import tfloop
from tfloop.compat import tf, tfv1
tfv1.disable_eager_execution()

class PredModel(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x")]

    def build_graph(self, x):
        tf.squeeze(tf.matmul(x, tfv1.get_variable("w", [3, 1])), 1, name="pred")

tfloop.ModelExporter(tfloop.PredictConfig(
    model=PredModel(), session_init={"w": np.array([[1.0], [2.0], [3.0]], np.float32)},
    output_names=["pred"])).export_serving("m")
"""


@pytest.mark.slow
def test_without_eager_execution_the_savedmodel_is_tf1s(tmp_path):
    done = run_python(["-c", textwrap.dedent(WITHOUT_EAGER)], tmp_path, os.environ,
                      scaled_timeout(60))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Eager execution is disabled in this process: the SavedModel is TF1's" in done.stdout
    loaded = tf.saved_model.load(str(tmp_path / "m"))
    assert not hasattr(loaded, "serve")
    np.testing.assert_allclose(
        loaded.signatures["serving_default"](x=tf.constant(X))["pred"].numpy(), [1.0, 6.0])
