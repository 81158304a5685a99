"""Exports hold what the model computes and no construct only training needs: the layers'
empty-batch guard (a ``tf.cond`` around each convolution and pooling under oneDNN) is in the
predictor's graph and in no export, so TFLite's converter and tf2onnx take an export made with
oneDNN on, and their runtimes give the predictor's outputs.

oneDNN is TensorFlow's default on AVX-512 CPUs and set by ``TF_ENABLE_ONEDNN_OPTS=1`` elsewhere,
read when TensorFlow is imported: the fast tests force the guard's oneDNN branch in this process;
the slow one trains and exports in a process with ``TF_ENABLE_ONEDNN_OPTS=1``.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from export_support import (
    COND_OPS,
    ConvNet,
    graph_def_ops,
    images,
    initial_weights,
    saved_model_ops,
)
from support import scaled_timeout

import tfloop
import tfloop.models.layer_args
from tfloop.compat import tf, tfv1
from tfloop.tfutils.export_graph import building_for_export, is_built_for_export

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_graph_is_built_for_export_only_within_the_block():
    graph = tf.Graph()
    assert not is_built_for_export(graph)
    with graph.as_default(), building_for_export(graph):
        assert is_built_for_export() and is_built_for_export(graph)
        assert not is_built_for_export(tf.Graph())
    assert not is_built_for_export(graph)


@pytest.fixture
def onednn_guard(monkeypatch):
    """The layers take the oneDNN branch of the empty-batch guard, whatever this CPU does."""
    monkeypatch.setattr(tfloop.models.layer_args, "onednn_enabled", lambda: True)


def convnet_config(weights, **kwargs):
    return tfloop.PredictConfig(model=ConvNet(), session_init=weights, output_names=["prob"],
                                **kwargs)


@pytest.fixture(scope="module")
def weights():
    return initial_weights(ConvNet())


@pytest.mark.slow
def test_the_predictor_has_the_guard_and_no_export_has_it(onednn_guard, weights, tmp_path):
    predictor = tfloop.OfflinePredictor(convnet_config(weights, input_names=["image"]))
    assert COND_OPS & graph_def_ops(predictor.graph.as_graph_def()), \
        "the guard is not built: this test no longer forces its oneDNN branch"
    exporter = tfloop.ModelExporter(convnet_config(weights, input_names=["image"]))
    exporter.export_serving(str(tmp_path / "serving"))
    exporter.export_compact(str(tmp_path / "frozen.pb"))
    exporter.export_compact(str(tmp_path / "unfolded.pb"), optimize=False)
    assert not COND_OPS & saved_model_ops(str(tmp_path / "serving"))
    for name in ("frozen.pb", "unfolded.pb"):
        graph_def = tfv1.GraphDef()
        graph_def.ParseFromString((tmp_path / name).read_bytes())
        assert not COND_OPS & graph_def_ops(graph_def), name
    # The same outputs, and an empty batch still predicts an empty result with the guard.
    x, _ = images(5)
    loaded = tf.saved_model.load(str(tmp_path / "serving"))
    np.testing.assert_allclose(loaded.serve(x)["prob"].numpy(), predictor(x)[0], atol=1e-6)
    assert predictor(x[:0])[0].shape == (0, 3)


# Runs with TF_ENABLE_ONEDNN_OPTS=1: trains the ConvNet, checks that the guard is built for
# training and prediction, exports, and saves the predictor's outputs to compare with.
EXPORT_WITH_ONEDNN = """
import json, sys
import numpy as np
import tfloop
from export_support import COND_OPS, ConvNet, graph_def_ops, images, train_convnet
from tfloop.compat import onednn_enabled
assert onednn_enabled(), "TF_ENABLE_ONEDNN_OPTS=1 did not turn oneDNN on"
checkpoint = train_convnet("train_log")
config = tfloop.PredictConfig(model=ConvNet(), session_init=checkpoint, output_names=["prob"],
                              input_names=["image"])
predictor = tfloop.OfflinePredictor(config)
x, _ = images(6, seed=3)
np.savez("expected.npz", x=x, prob=predictor(x)[0])
tfloop.ModelExporter(tfloop.PredictConfig(model=ConvNet(), session_init=checkpoint,
                                          output_names=["prob"])).export_serving_version("export")
print(json.dumps({"guard_in_predictor": bool(COND_OPS & graph_def_ops(
    predictor.graph.as_graph_def()))}))
"""


def run_with_onednn(script, cwd):
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(filter(None, [TESTS, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=scaled_timeout(180))
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_tflite(saved_model, x):
    model = tf.lite.TFLiteConverter.from_saved_model(saved_model).convert()
    runner = tf.lite.Interpreter(model_content=model).get_signature_runner("serving_default")
    return runner(image=x)["prob"]


def run_onnx(saved_model, x, tmp_path):
    import onnxruntime
    onnx_file = str(tmp_path / "model.onnx")
    done = subprocess.run([sys.executable, "-m", "tf2onnx.convert", "--saved-model", saved_model,
                           "--output", onnx_file], capture_output=True, text=True,
                          timeout=scaled_timeout(240), env=dict(os.environ,
                                                                TF_CPP_MIN_LOG_LEVEL="2"))
    assert done.returncode == 0, done.stderr[-4000:]
    session = onnxruntime.InferenceSession(onnx_file, providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["image"]
    return session.run(["prob"], {"image": x})[0]


@pytest.mark.slow
@pytest.mark.timeout(scaled_timeout(600))
def test_an_export_made_with_onednn_converts_to_tflite_and_onnx(tmp_path):
    result = run_with_onednn(EXPORT_WITH_ONEDNN, tmp_path)
    assert result == {"guard_in_predictor": True}
    saved_model = str(tmp_path / "export" / "1")
    assert not COND_OPS & saved_model_ops(saved_model)
    expected = np.load(tmp_path / "expected.npz")
    x, prob = expected["x"], expected["prob"]
    np.testing.assert_allclose(run_tflite(saved_model, x), prob, atol=1e-5)
    np.testing.assert_allclose(run_onnx(saved_model, x, tmp_path), prob, atol=1e-5)
