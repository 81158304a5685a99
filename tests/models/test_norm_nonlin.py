"""LayerNorm, InstanceNorm, BNReLU, PReLU and Maxout against numpy."""
import numpy as np
import pytest

from tfloop import BNReLU, Conv2D, InstanceNorm, LayerNorm, Maxout, PReLU, TowerContext
from tfloop.compat import tf, tfv1

RNG = np.random.RandomState(0)
EPS = 1e-5


def evaluate(build, x, training=True):
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=training):
            out = build(inp)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            return sess.run((out, {v.op.name: v for v in tfv1.global_variables()}), {inp: x})


def normalized(x, axes):
    return (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + EPS)


@pytest.mark.parametrize("shape,data_format", [((3, 5), "NHWC"), ((2, 3, 4, 5), "NHWC"),
                                               ((2, 5, 3, 4), "NCHW")])
def test_layer_norm(shape, data_format):
    x = RNG.rand(*shape).astype(np.float32)
    init = tf.constant_initializer(2.0)
    y, variables = evaluate(
        lambda t: LayerNorm("ln", t, data_format=data_format, gamma_init=init), x)
    assert sorted(variables) == ["ln/beta", "ln/gamma"] and variables["ln/gamma"].shape == (5,)
    np.testing.assert_allclose(y, 2 * normalized(x, tuple(range(1, len(shape)))), atol=1e-4)
    y, variables = evaluate(lambda t: LayerNorm("ln", t, use_bias=False, use_scale=False,
                                                data_format=data_format), x)
    assert variables == {}


def test_instance_norm():
    x = RNG.rand(2, 3, 4, 5).astype(np.float32)
    y, variables = evaluate(lambda t: InstanceNorm("in", t), x)
    assert sorted(variables) == ["in/beta", "in/gamma"]
    np.testing.assert_allclose(y, normalized(x, (1, 2)), atol=1e-4)
    y, variables = evaluate(lambda t: InstanceNorm("in", t, data_format="NCHW", center=False), x)
    assert sorted(variables) == ["in/gamma"]
    np.testing.assert_allclose(y, normalized(x, (2, 3)), atol=1e-4)


def test_bnrelu_as_an_activation_puts_its_batchnorm_in_the_layer():
    x = RNG.randn(4, 3, 3, 2).astype(np.float32)
    y, variables = evaluate(lambda t: Conv2D("conv", t, 3, 1, activation=BNReLU), x)
    assert sorted(variables) == ["conv/W", "conv/b", "conv/bn/beta", "conv/bn/gamma",
                                 "conv/bn/mean/EMA", "conv/bn/variance/EMA"]
    conv = np.einsum("nhwc,cf->nhwf", x, variables["conv/W"][0, 0]) + variables["conv/b"]
    np.testing.assert_allclose(y, np.maximum(normalized(conv, (0, 1, 2)), 0), atol=1e-4)
    y, variables = evaluate(lambda t: BNReLU("bnrelu", t), x)
    assert "bnrelu/bn/gamma" in variables


def test_prelu():
    x = RNG.randn(3, 4).astype(np.float32)
    y, variables = evaluate(lambda t: PReLU("prelu", t, 0.25), x)
    assert list(variables) == ["prelu/alpha"] and variables["prelu/alpha"] == np.float32(0.25)
    np.testing.assert_allclose(y, np.where(x > 0, x, 0.25 * x), rtol=1e-6)


def test_maxout():
    x = RNG.randn(2, 3, 3, 6).astype(np.float32)
    y, _ = evaluate(lambda t: Maxout(t, 3), x)
    np.testing.assert_allclose(y, x.reshape(2, 3, 3, 2, 3).max(-1))
    x2 = RNG.randn(4, 6).astype(np.float32)
    y, _ = evaluate(lambda t: Maxout("maxout", t, 2), x2)
    np.testing.assert_allclose(y, x2.reshape(4, 3, 2).max(-1))
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="divisible by num_unit=4"):
            Maxout(tfv1.placeholder(tf.float32, [None, 6]), 4)
