"""Conv2D and Conv2DTranspose: variable names and shapes, tensorpack's argument names, NCHW on a
CPU, group and dilated convolutions, checked against numpy."""
import math

import numpy as np
import pytest

from tfloop import Conv2D, Conv2DTranspose, Deconv2D, argscope, l2_regularizer
from tfloop.compat import tf, tfv1

RNG = np.random.RandomState(0)


def np_conv2d(x, w, stride=(1, 1), padding="SAME", dilation=(1, 1)):
    """NHWC convolution (cross-correlation, as TensorFlow's) of x [N,H,W,C] with w [kh,kw,C,F]."""
    n, h, wd, _ = x.shape
    kh, kw = (w.shape[0] - 1) * dilation[0] + 1, (w.shape[1] - 1) * dilation[1] + 1
    if padding == "SAME":
        oh, ow = math.ceil(h / stride[0]), math.ceil(wd / stride[1])
        ph, pw = max((oh - 1) * stride[0] + kh - h, 0), max((ow - 1) * stride[1] + kw - wd, 0)
        x = np.pad(x, [(0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)])
    else:
        oh, ow = (h - kh) // stride[0] + 1, (wd - kw) // stride[1] + 1
    out = np.zeros((n, oh, ow, w.shape[3]), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride[0]:i * stride[0] + kh:dilation[0],
                      j * stride[1]:j * stride[1] + kw:dilation[1], :]
            out[:, i, j, :] = np.einsum("nabc,abcf->nf", patch, w)
    return out


def np_conv2d_transpose(x, w, stride, padding):
    """NHWC transposed convolution of x [N,H,W,C] with w [kh,kw,F,C], TensorFlow's output size."""
    n, h, wd, _ = x.shape
    kh, kw, f, _ = w.shape
    full = np.zeros((n, (h - 1) * stride + kh, (wd - 1) * stride + kw, f))
    for i in range(h):
        for j in range(wd):
            full[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :] += \
                np.einsum("nc,abfc->nabf", x[:, i, j, :], w)
    if padding == "SAME":
        oh, ow = h * stride, wd * stride
        top, left = (max((h - 1) * stride + kh - oh, 0) // 2,
                     max((wd - 1) * stride + kw - ow, 0) // 2)
    else:
        oh, ow, top, left = (h * stride + max(kh - stride, 0), wd * stride + max(kw - stride, 0),
                             0, 0)
    full = np.pad(full, [(0, 0), (0, max(0, top + oh - full.shape[1])),
                         (0, max(0, left + ow - full.shape[2])), (0, 0)])
    return full[:, top:top + oh, left:left + ow, :]


def evaluate(build, *arrays):
    """Build ``build(*placeholders)`` in a fresh graph; run its outputs and variables on arrays."""
    with tf.Graph().as_default():
        inputs = [tfv1.placeholder(tf.float32, a.shape) for a in arrays]
        out = build(*inputs)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            return sess.run((out, {v.op.name: v for v in tfv1.global_variables()}),
                            dict(zip(inputs, arrays)))


def nhwc(a):
    return a.transpose(0, 2, 3, 1)


def nchw(a):
    return a.transpose(0, 3, 1, 2)


@pytest.mark.parametrize("padding,stride,dilation", [
    ("same", 1, 1), ("SAME", 2, 1), ("valid", 1, 1), ("Valid", 2, 1), ("same", 1, 2)])
def test_conv2d_matches_numpy(padding, stride, dilation):
    x = RNG.rand(2, 7, 6, 3).astype(np.float32)
    y, variables = evaluate(lambda t: Conv2D("conv0", t, 4, 3, strides=stride, padding=padding,
                                             dilation_rate=dilation, activation=tf.nn.relu), x)
    assert sorted(variables) == ["conv0/W", "conv0/b"]
    assert variables["conv0/W"].shape == (3, 3, 3, 4)
    expected = np_conv2d(x, variables["conv0/W"], (stride, stride), padding.upper(),
                         (dilation, dilation))
    np.testing.assert_allclose(y, np.maximum(expected + variables["conv0/b"], 0), atol=1e-5)


def test_conv2d_nchw_on_cpu_equals_nhwc():
    x = RNG.rand(2, 3, 6, 6).astype(np.float32)
    y, variables = evaluate(lambda t: Conv2D("conv", t, 4, 3, strides=2, data_format="NCHW",
                                             b_init=tf.constant_initializer(0.5)), x)
    assert y.shape == (2, 4, 3, 3)
    expected = np_conv2d(nhwc(x), variables["conv/W"], (2, 2)) + 0.5
    np.testing.assert_allclose(nhwc(y), expected, atol=1e-5)


def test_group_convolution_with_split():
    x = RNG.rand(2, 5, 5, 4).astype(np.float32)
    y, variables = evaluate(lambda t: Conv2D("g", t, 6, 3, split=2, use_bias=False), x)
    w = variables["g/W"]
    assert w.shape == (3, 3, 2, 6) and sorted(variables) == ["g/W"]
    expected = np.concatenate([np_conv2d(x[..., :2], w[..., :3]),
                               np_conv2d(x[..., 2:], w[..., 3:])], axis=-1)
    np.testing.assert_allclose(y, expected, atol=1e-5)


def test_tensorpack_argument_names_and_argscope():
    x = RNG.rand(1, 4, 4, 2).astype(np.float32)

    def build(t):
        with argscope(Conv2D, kernel_shape=1, nl=tf.identity, out_channel=3,
                      W_init=tf.constant_initializer(2.0)):
            a = Conv2D("a", t)
            b = Conv2D("b", t, 5, stride=2)     # positional filters override the argscope
        return a, b, a.variables.W, b.variables.b

    (a, b, wa, bb), _ = evaluate(build, x)
    np.testing.assert_allclose(a, np.repeat(2 * x.sum(-1, keepdims=True), 3, -1), rtol=1e-6)
    assert wa.shape == (1, 1, 2, 3) and b.shape == (1, 2, 2, 5) and bb.shape == (5,)


def test_conv2d_errors_name_the_argument():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 4, 4, None])
        with pytest.raises(ValueError, match="known number of input channels"):
            Conv2D("c", x, 3, 3)
        x = tfv1.placeholder(tf.float32, [None, 4, 4, 3])
        with pytest.raises(ValueError, match="padding must be 'same' or 'valid'"):
            Conv2D("c1", x, 3, 3, padding="full")
        with pytest.raises(ValueError, match="split=2 must be a positive int dividing"):
            Conv2D("c2", x, 4, 3, split=2)
        with pytest.raises(TypeError, match="got both out_channel= and filters="):
            Conv2D("c3", x, kernel_size=3, out_channel=2, filters=2)
        with pytest.raises(TypeError, match="the first argument is the layer's name"):
            Conv2D(x, 3, 3)
        with pytest.raises(ValueError, match="unknown data_format 'NWHC'"):
            Conv2D("c4", x, 3, 3, data_format="NWHC")


def test_kernel_regularizer_loss_is_added_once_for_two_towers():
    import tfloop
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 4, 4, 2])
        for name, training in [("", True), ("infer", False)]:
            with tfloop.TowerContext(name, is_training=training):
                Conv2D("c", x, 3, 3, kernel_regularizer=l2_regularizer(0.1))
        losses = tfv1.get_collection(tfv1.GraphKeys.REGULARIZATION_LOSSES)
        assert len(losses) == 1
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            w = sess.run(tfv1.global_variables()[0])
            np.testing.assert_allclose(sess.run(losses[0]), 0.05 * (w ** 2).sum(), rtol=1e-5)


@pytest.mark.parametrize("padding,stride,kernel", [("same", 2, 3), ("valid", 2, 3),
                                                   ("same", 1, 3), ("valid", 3, 2)])
def test_conv2d_transpose_matches_numpy(padding, stride, kernel):
    x = RNG.rand(2, 3, 4, 2).astype(np.float32)
    y, variables = evaluate(lambda t: Deconv2D("deconv", t, 5, kernel, stride, padding=padding), x)
    assert sorted(variables) == ["deconv/W", "deconv/b"]
    assert variables["deconv/W"].shape == (kernel, kernel, 5, 2)
    expected = np_conv2d_transpose(x, variables["deconv/W"], stride, padding.upper())
    np.testing.assert_allclose(y, expected + variables["deconv/b"], atol=1e-5)


def test_conv2d_transpose_static_shape_and_nchw():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [1, 12, None, 3])
        for padding in ["same", "valid"]:
            y = Conv2DTranspose(f"d_{padding}", x, 20, 3, strides=2, padding=padding)
            expected_h = 24 if padding == "same" else 25
            assert y.shape.as_list() == [1, expected_h, None, 20]
    x = RNG.rand(1, 2, 3, 3).astype(np.float32)
    y, variables = evaluate(lambda t: Conv2DTranspose("d", t, 4, 3, strides=2,
                                                      data_format="channels_first"), x)
    expected = np_conv2d_transpose(nhwc(x), variables["d/W"], 2, "SAME") + variables["d/b"]
    np.testing.assert_allclose(y, nchw(expected), atol=1e-5)


def test_nchw_layers_on_cpu_return_an_empty_result_for_an_empty_batch():
    # Mask R-CNN's head (channels_first) sees no ROI when an image has no detection: tensorpack
    # returns an empty result, and so must every NCHW layer on the CPU, gradients included.
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 4, None, None])
        with argscope([Conv2D, Conv2DTranspose], data_format="channels_first"):
            y = Conv2D("conv", x, 6, 3, activation=tf.nn.relu)
            y = Conv2D("group", y, 6, 3, split=2)
            y = Conv2DTranspose("deconv", y, 3, 2, strides=2, activation=tf.nn.relu)
            y = Conv2D("logits", y, 2, 1)
        grads = tf.gradients(tf.reduce_sum(y), tfv1.trainable_variables())
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out, *values = sess.run([y] + grads, {x: np.zeros((0, 4, 7, 7), np.float32)})
    assert out.shape == (0, 2, 14, 14)
    assert all(not np.any(g) for g in values)
