"""PredictConfig(mixed_precision=..., xla=...): the predictor's session computes in float16 (or
compiles with XLA), its inputs, outputs and variables stay float32, and bad values are refused."""
import collections

import numpy as np
import pytest
from precision_support import REDUCED, ConvNet, images, train_convnet

import tfloop
from tfloop.compat import tf, tfv1


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A checkpoint of the tiny convnet, trained in float32."""
    logdir = str(tmp_path_factory.mktemp("convnet"))
    tfloop.logger.set_logger_dir(logdir, action="k")
    try:
        train_convnet(callbacks=[tfloop.ModelSaver()])
    finally:
        tfloop.logger.unset_logger_dir()
    return logdir


def _predictor(trained, **options):
    return tfloop.OfflinePredictor(tfloop.PredictConfig(
        model=ConvNet(), session_init=trained, input_names=["image"], output_names=["prob"],
        **options))


def _nodes_that_ran(predictor, x):
    """(reduced-precision node counts, XLA launches) of one prediction."""
    metadata = tfv1.RunMetadata()
    predictor.sess.run(predictor.output_tensors, {predictor.input_tensors[0]: x},
                       options=tfv1.RunOptions(output_partition_graphs=True),
                       run_metadata=metadata)
    reduced, xla = collections.Counter(), 0
    for graph in metadata.partition_graphs:
        for node in graph.node:
            kinds = [node.attr[k].type for k in ("T", "DstT") if k in node.attr]
            reduced.update(REDUCED[t] for t in kinds[:1] if t in REDUCED)
            xla += node.op == "_XlaCompile"
    return reduced, xla


def test_float16_prediction_computes_in_float16_and_returns_float32(trained):
    x, _ = images(8, seed=2)
    expected, = _predictor(trained)(x)
    predictor = _predictor(trained, mixed_precision="float16")
    prob, = predictor(x)
    assert prob.dtype == np.float32
    np.testing.assert_allclose(prob, expected, atol=5e-3)
    reduced, _ = _nodes_that_ran(predictor, x)
    assert reduced["float16"] >= 3
    assert {v.dtype.base_dtype.name for v in predictor.graph.get_collection(
        tfv1.GraphKeys.GLOBAL_VARIABLES)} == {"float32"}


def test_float32_prediction_has_no_reduced_precision(trained):
    x, _ = images(4, seed=3)
    assert _nodes_that_ran(_predictor(trained), x) == ({}, 0)


def _elementwise(x):
    # A chain XLA clusters (the convnet's fused conv and matmul are left to TensorFlow).
    return tf.identity(tf.tanh(x * 2.0 + 1.0) * tf.sigmoid(x) - tf.square(x), name="y")


def test_xla_prediction_compiles_and_matches():
    predictors = [tfloop.OfflinePredictor(tfloop.PredictConfig(
        tower_func=_elementwise, input_signature=[tf.TensorSpec([None, 5], tf.float32, "x")],
        output_names=["y"], xla=xla)) for xla in (False, True)]
    x = np.linspace(-2, 2, 20, dtype=np.float32).reshape(4, 5)
    plain, compiled = (p(x)[0] for p in predictors)
    np.testing.assert_allclose(compiled, plain, rtol=1e-5, atol=1e-6)
    assert _nodes_that_ran(predictors[0], x)[1] == 0 and _nodes_that_ran(predictors[1], x)[1] > 0


@pytest.mark.parametrize("options,match", [
    ({"mixed_precision": "fp16"}, "'bfloat16' or 'float16'"),
    ({"xla": "yes"}, "xla='yes'"),
])
def test_bad_values_are_refused_before_anything_is_built(options, match):
    with pytest.raises(ValueError, match=match):
        tfloop.PredictConfig(model=ConvNet(), output_names=["prob"], **options)
