"""FullyConnected and the pooling layers: names, shapes, and values against numpy."""
import numpy as np
import pytest

from tfloop import (
    AvgPooling,
    FixedUnPooling,
    FullyConnected,
    GlobalAvgPooling,
    MaxPooling,
    l1_regularizer,
)
from tfloop.compat import tf, tfv1

RNG = np.random.RandomState(0)


def evaluate(build, x, shape=None):
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, shape or x.shape)
        out = build(inp)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            return sess.run((out, {v.op.name: v for v in tfv1.global_variables()}), {inp: x})


def test_fully_connected_flattens_and_matches_numpy():
    x = RNG.rand(3, 2, 2, 2).astype(np.float32)
    y, variables = evaluate(lambda t: FullyConnected("fc", t, out_dim=4, nl=tf.nn.relu,
                                                     b_init=tf.constant_initializer(-0.1)), x)
    assert sorted(variables) == ["fc/W", "fc/b"] and variables["fc/W"].shape == (8, 4)
    np.testing.assert_allclose(y, np.maximum(x.reshape(3, 8) @ variables["fc/W"] - 0.1, 0),
                               atol=1e-5)


def test_fully_connected_output_name_variables_and_regularizer():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 5])
        y = FullyConnected("fc", x, 3, use_bias=False, kernel_regularizer=l1_regularizer(2.0))
        assert y.name == "fc/output:0" and y.variables.all() == [y.variables.W]
        with pytest.raises(AttributeError, match="no variable 'b'"):
            _ = y.variables.b
        (loss,) = tfv1.get_collection(tfv1.GraphKeys.REGULARIZATION_LOSSES)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            w, value = sess.run([y.variables.W, loss])
        np.testing.assert_allclose(value, 2.0 * np.abs(w).sum(), rtol=1e-5)


def test_fully_connected_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="needs an input of rank >= 2"):
            FullyConnected("fc", tfv1.placeholder(tf.float32, [None]), 3)
        with pytest.raises(ValueError, match="non-batch dimensions of its input known"):
            FullyConnected("fc1", tfv1.placeholder(tf.float32, [None, None]), 3)


def np_pool(x, size, stride, reduce):
    n, h, w, c = x.shape
    oh, ow = (h - size) // stride + 1, (w - size) // stride + 1
    out = np.zeros((n, oh, ow, c), np.float32)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = reduce(x[:, i * stride:i * stride + size, j * stride:j * stride + size],
                                  axis=(1, 2))
    return out


@pytest.mark.parametrize("layer,reduce", [(MaxPooling, np.max), (AvgPooling, np.mean)])
def test_pooling_matches_numpy_in_both_layouts(layer, reduce):
    x = RNG.rand(2, 6, 5, 3).astype(np.float32)
    y, _ = evaluate(lambda t: layer("pool", t, 2), x)
    np.testing.assert_allclose(y, np_pool(x, 2, 2, reduce), rtol=1e-6)
    y, _ = evaluate(lambda t: layer("pool", t, shape=3, stride=1, padding="VALID"), x)
    np.testing.assert_allclose(y, np_pool(x, 3, 1, reduce), rtol=1e-6)
    y, _ = evaluate(lambda t: layer("pool", t, 2, data_format="NCHW"), x.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(y.transpose(0, 2, 3, 1), np_pool(x, 2, 2, reduce), rtol=1e-6)
    y, _ = evaluate(lambda t: layer("pool", t, 2, padding="same"), x)
    assert y.shape == (2, 3, 3, 3)


def test_global_avg_pooling():
    x = RNG.rand(2, 3, 4, 5).astype(np.float32)
    y, _ = evaluate(lambda t: GlobalAvgPooling("gap", t), x)
    np.testing.assert_allclose(y, x.mean((1, 2)), rtol=1e-6)
    y, _ = evaluate(lambda t: GlobalAvgPooling("gap", t, data_format="channels_first"), x)
    np.testing.assert_allclose(y, x.mean((2, 3)), rtol=1e-6)


def test_fixed_unpooling_puts_each_pixel_at_the_corner():
    """tensorpack's own models_test for FixedUnPooling."""
    h, w, scale = 3, 4, 2
    mat = RNG.rand(h, w, 3).astype(np.float32)
    res, _ = evaluate(lambda t: FixedUnPooling("unpool", tf.reshape(t, [1, h, w, 3]), scale), mat)
    assert res.shape == (1, scale * h, scale * w, 3)
    assert (res[0, ::scale, ::scale, 0] == mat[:, :, 0]).all()
    res[0, ::scale, ::scale, :] = 0
    assert (res == 0).all()


def test_fixed_unpooling_with_a_matrix_is_a_kronecker_product():
    x = RNG.rand(2, 3, 2, 2).astype(np.float32)
    mat = np.array([[1.0, 2.0, 0.0], [0.5, 1.0, 3.0]], np.float32)
    y, _ = evaluate(lambda t: FixedUnPooling("unpool", t, (2, 3), unpool_mat=mat,
                                             data_format="NCHW"), x, [None, 3, None, 2])
    expected = np.stack([np.stack([np.kron(x[n, c], mat) for c in range(3)]) for n in range(2)])
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    with tf.Graph().as_default():
        t = tfv1.placeholder(tf.float32, [None, 3, None, 2])
        assert FixedUnPooling("u", t, (2, 3), data_format="NCHW").shape.as_list() == \
            [None, 3, None, 6]
        with pytest.raises(ValueError, match="unpool_mat has shape"):
            FixedUnPooling("u2", t, 2, unpool_mat=mat)
