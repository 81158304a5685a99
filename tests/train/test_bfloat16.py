"""mixed_precision='bfloat16' on a small ResNet of tfloop's layers (Conv2D, BatchNorm, ReLU, a
residual sum, FullyConnected), in a process with oneDNN forced on (the rewrite needs it): which
ops run in bfloat16, the Cast nodes of a step, float32 variables and updates, and the float32
run's cost and accuracy reached. Without oneDNN: what the layers and the option do alone."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from precision_support import TinyResNet, train_convnet
from support import scaled_timeout

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils import precision
from tfloop.tfutils.precision import Precision

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REMOVE = "TF_AUTO_MIXED_PRECISION_GRAPH_REWRITE_ALLOWLIST_REMOVE"


def _with_onednn(code, cpu_flags=None):
    """Run ``code`` (it prints one JSON line starting with RESULT) with oneDNN on; with
    ``cpu_flags``, the CPU's flags are replaced by them before training."""
    patch = "" if cpu_flags is None else (
        f"import tfloop.tfutils.precision as p; p._cpu_flags = lambda: set({cpu_flags!r}); ")
    script = (f"import sys, json; sys.path[:0] = [{TESTS!r}]; {patch}"
              "import precision_support as t; " + code)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS="1"),
                         timeout=scaled_timeout(300))
    lines = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")]
    assert lines, out.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


STEP = ("p = t.train_convnet(model=t.TinyResNet(), mixed_precision='bfloat16'); "
        "f = t.train_convnet(model=t.TinyResNet()); "
        "print('RESULT', json.dumps({'ops': dict(p.reduced_ops), 'casts': p.casts, "
        "'float32_ops': dict(f.ops), 'updates': sorted(d.name for d in p.update_dtypes), "
        "'variables': sorted(d.name for d in p.dtypes)}))")
# What a step computes, by op type: the same in the float32 step whatever names oneDNN runs it
# under on this CPU (op_types_support), and in bfloat16 in the bfloat16 step.
COMPUTE = ("Conv2D", "FusedBatchNormV3", "FusedBatchNormGradV3", "Relu", "ReluGrad", "MatMul",
           "BiasAdd")
GRADIENTS = ("Conv2DBackpropFilter", "Conv2DBackpropInput")


@pytest.mark.slow
@pytest.mark.parametrize("hardware", [True, False])
def test_bfloat16_step_of_a_small_resnet(hardware):
    step = _with_onednn(STEP, ["avx512_bf16"] if hardware else [])
    ops, float32 = step["ops"], step["float32_ops"]
    # Every convolution (twice: both branches of oneDNN's empty-batch guard), batch norm (one
    # fused op each way), ReLU and matmul of the float32 step runs in bfloat16 ...
    assert float32["Conv2D"] == 6 and float32["FusedBatchNormV3"] == 3
    assert float32["FusedBatchNormGradV3"] == 3 and float32["Relu"] == 3
    assert {op: ops.get(op, 0) for op in COMPUTE} == {op: float32[op] for op in COMPUTE}
    # ... with no batch-norm arithmetic left outside the fused ops.
    assert not {"SquaredDifference", "Rsqrt", "Sub"} & set(ops), ops
    # All the convolutions' gradients in bfloat16 where the CPU has bfloat16 arithmetic, else
    # none.
    assert {op: ops.get(op, 0) for op in GRADIENTS} == \
        {op: float32[op] if hardware else 0 for op in GRADIENTS}
    assert float32["Conv2DBackpropFilter"] == 6
    # Casts: 59 when BatchNorm was unfused float32 arithmetic; now the image, the kernels and
    # their gradients, the logits (26); without the hardware also the inputs and outputs of the
    # convolutions' float32 gradients (37).
    assert step["casts"] <= (26 if hardware else 37), step
    assert step["variables"] == ["float32", "int64"]
    assert step["updates"] == ["float32"]


@pytest.mark.slow
def test_bfloat16_training_reaches_the_float32_cost_and_accuracy():
    code = ("print('RESULT', json.dumps([t.digits_result(m, steps=300, "
            "model=t.TinyResNet(10, 16)) for m in (None, 'bfloat16')]))")
    fp32, bf16 = _with_onednn(code)
    assert fp32["accuracy"] > 0.9, fp32
    assert abs(bf16["accuracy"] - fp32["accuracy"]) <= 0.01, (fp32, bf16)
    assert abs(bf16["cost"] - fp32["cost"]) <= 0.05 * fp32["cost"] + 0.01, (fp32, bf16)


def test_bfloat16_input_batch_norm_is_one_fused_op_with_float32_variables():
    x = np.random.RandomState(0).rand(4, 3, 3, 2).astype(np.float32) * 2 + 1
    with tf.Graph().as_default() as graph:
        inp = tfv1.placeholder(tf.float32, x.shape)
        with tfloop.TowerContext("", is_training=True):
            y = tfloop.BatchNorm("bn", tf.cast(inp, tf.bfloat16), momentum=0.0,
                                 ema_update="internal")
        fused = [op for op in graph.get_operations() if op.type == "FusedBatchNormV3"]
        assert len(fused) == 1 and fused[0].get_attr("U") == tf.float32
        assert y.dtype == tf.bfloat16
        assert {v.dtype.base_dtype for v in tfv1.global_variables()} == {tf.float32}
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(tf.cast(y, tf.float32), {inp: x})
            mean, var = sess.run([y.variables.mean, y.variables.variance])
    rounded = x.astype(tf.bfloat16.as_numpy_dtype).astype(np.float32)
    axes = (0, 1, 2)
    np.testing.assert_allclose(mean, rounded.mean(axes), rtol=1e-5)
    np.testing.assert_allclose(var, rounded.var(axes), rtol=1e-4)       # biased, as moments'
    expected = (rounded - rounded.mean(axes)) / np.sqrt(rounded.var(axes) + 1e-5)
    np.testing.assert_allclose(out, expected, atol=0.02)


def test_bfloat16_2d_batch_norm_computes_in_float32_and_answers_in_bfloat16():
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.bfloat16, [None, 3])
        with tfloop.TowerContext("", is_training=True):
            y = tfloop.BatchNorm("bn", inp)
        assert y.dtype == tf.bfloat16
        assert {v.dtype.base_dtype for v in tfv1.global_variables()} == {tf.float32}
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(y, {inp: np.array([[1, 2, 3], [3, 6, 9]], np.float32)})
    np.testing.assert_allclose(out.astype(np.float32), [[-1] * 3, [1] * 3], atol=0.01)


@pytest.mark.parametrize("flags, expected", [
    (set(), "Mine,Conv2DBackpropFilter,Conv2DBackpropInput"),
    ({"avx2", "avx512f"}, "Mine,Conv2DBackpropFilter,Conv2DBackpropInput"),
    ({"avx512_bf16"}, "Mine"),
    ({"amx_bf16", "amx_tile"}, "Mine"),
])
def test_convolution_gradients_stay_float32_only_on_cpus_without_bfloat16(
        monkeypatch, flags, expected):
    monkeypatch.setattr(precision, "_cpu_flags", lambda: flags)
    monkeypatch.setenv(REMOVE, "Mine")
    config = Precision("bfloat16").apply(tfv1.ConfigProto())
    assert os.environ[REMOVE] == "Mine"                     # apply leaves the process alone
    with Precision("bfloat16").rewriter_environment():
        with Precision("bfloat16").rewriter_environment():  # a second run adds nothing twice
            assert os.environ[REMOVE] == expected
        assert os.environ[REMOVE] == expected
    assert os.environ[REMOVE] == "Mine"
    assert config.graph_options.rewrite_options.auto_mixed_precision_onednn_bfloat16 == 1


@pytest.mark.parametrize("flags, emulated", [
    (set(), True), ({"avx2", "avx512f"}, True), ({"avx512_bf16"}, False), ({"amx_bf16"}, False),
])
def test_bfloat16_warns_of_emulation_only_on_cpus_without_bfloat16(
        caplog, monkeypatch, flags, emulated):
    monkeypatch.setattr(precision, "_cpu_flags", lambda: flags)
    monkeypatch.setattr(precision, "_onednn_enabled", lambda: True)
    Precision("bfloat16").check_hardware()
    assert ("neither AMX nor AVX512-BF16" in caplog.text) == emulated
    assert "stays float32" not in caplog.text


def test_float32_tiny_resnet_trains_with_fused_batch_norm():
    probe = train_convnet(model=TinyResNet())
    assert probe.reduced == {} and probe.update_dtypes == {tf.float32}
