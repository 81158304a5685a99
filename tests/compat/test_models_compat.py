"""tensorpack's models/models_test.py scenarios through tfloop.models (in a graph of their own:
tfloop leaves TensorFlow's eager default alone)."""
import numpy as np
import pytest

from tfloop import tfv1
from tfloop.models import Conv2DTranspose, FixedUnPooling


def evaluate(fetches, feed_dict=None):
    with tfv1.Session() as sess:
        sess.run(tfv1.global_variables_initializer())
        return sess.run(fetches, feed_dict=feed_dict)


def test_fixed_unpooling_puts_each_value_in_the_corner_and_zeros_elsewhere():
    h, w, scale = 3, 4, 2
    mat = np.random.RandomState(0).rand(h, w, 3).astype("float32")
    with tfv1.Graph().as_default():
        x = tfv1.reshape(tfv1.Variable(mat), [1, h, w, 3])
        out = evaluate(FixedUnPooling("unpool", x, scale))
    assert out.shape == (1, scale * h, scale * w, 3)
    np.testing.assert_array_equal(out[0, ::scale, ::scale, :], mat)
    out[0, ::scale, ::scale, :] = 0
    assert not out.any()


@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_transpose_static_shape_matches_the_computed_one(padding, stride):
    with tfv1.Graph().as_default():
        x = tfv1.Variable(np.random.RandomState(0).rand(1, 12, 18, 3).astype("float32"))
        out = Conv2DTranspose("deconv", x, 20, 3, strides=stride, padding=padding)
        assert tuple(out.shape.as_list()) == evaluate(out).shape


@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_transpose_with_an_unknown_width(padding, stride):
    with tfv1.Graph().as_default():
        x = tfv1.placeholder(tfv1.float32, [1, 12, None, 3])
        out = Conv2DTranspose("deconv", x, 20, 3, strides=stride, padding=padding)
        static = tuple(out.shape.as_list())
        dynamic = evaluate(out, {x: np.random.RandomState(0).rand(1, 12, 18, 3)}).shape
    assert static[2] is None
    assert static[:2] == dynamic[:2] and static[3] == dynamic[3]
