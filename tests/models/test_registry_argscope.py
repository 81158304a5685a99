"""layer_register, the shape log, VariableHolder, argscope, LinearWrap and ConcatWith."""
import types

import numpy as np
import pytest

import tfloop
from tfloop import (
    ConcatWith,
    Conv2D,
    FullyConnected,
    LinearWrap,
    MaxPooling,
    TowerContext,
    VariableHolder,
    argscope,
    enable_argscope_for_function,
    enable_argscope_for_module,
    get_arg_scope,
    layer_register,
)
from tfloop.compat import tf, tfv1
from tfloop.models import registry


@layer_register(log_shape=True)
def AddBias(x, init=1.0):
    b = tfv1.get_variable("b", [], initializer=tfv1.constant_initializer(init))
    return tf.identity(x + b, name="output")


@layer_register(log_shape=True)
def TwoBiases(x):
    return AddBias("inner", AddBias("first", x))


def test_a_registered_layer_runs_in_its_scope_with_argscope_defaults():
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 2])
        with argscope(AddBias, init=3.0):
            assert get_arg_scope()["AddBias"] == {"init": 3.0}
            y = AddBias("bias0", x)
            z = AddBias("bias1", x, init=5.0)
        assert get_arg_scope()["AddBias"] == {}
        assert y.name == "bias0/output:0"
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            assert sess.run([y, z], {x: [[0.0, 1.0]]})[1].tolist() == [[5.0, 6.0]]
            assert sess.run(y, {x: [[0.0, 1.0]]}).tolist() == [[3.0, 4.0]]
    assert registry.get_registered_layer("AddBias") is AddBias
    assert registry.get_registered_layer("Deconv2D") is tfloop.Conv2DTranspose


def test_shapes_are_logged_once_per_layer_in_the_first_tower(log_lines):
    with tf.Graph().as_default():
        x = tfv1.placeholder(tf.float32, [None, 4, 4, 1])
        for i, (name, training) in enumerate([("tower0", True), ("tower1", True),
                                              ("infer", False)]):
            with TowerContext(name, is_training=training, index=i if training else 0,
                              vs_name=name if name == "tower1" else ""):
                y = Conv2D("conv0", x, 2, 3)
                MaxPooling("pool", TwoBiases("nest", y), 2)
    assert log_lines == ["'conv0': [?, 4, 4, 1] --> [?, 4, 4, 2]",
                         "'nest' input: [?, 4, 4, 2]",
                         "  'nest/first': [?, 4, 4, 2] --> [?, 4, 4, 2]",
                         "  'nest/inner': [?, 4, 4, 2] --> [?, 4, 4, 2]",
                         "'nest' output: [?, 4, 4, 2]",
                         "'pool': [?, 4, 4, 2] --> [?, 2, 2, 2]"]


def test_disable_layer_logging(log_lines, monkeypatch):
    monkeypatch.setattr(registry, "_LOGGING_DISABLED", [])
    tfloop.disable_layer_logging()
    with tf.Graph().as_default():
        Conv2D("conv0", tfv1.placeholder(tf.float32, [None, 4, 4, 1]), 2, 3)
    assert log_lines == []


def test_variable_holder():
    holder = VariableHolder(W=1)
    holder.b = 2
    assert (holder.W, holder.b, holder.all()) == (1, 2, [1, 2])
    with pytest.raises(ValueError, match="already holds a variable named 'W'"):
        holder.W = 3
    with pytest.raises(AttributeError, match="no variable 'gamma'; it has: W, b"):
        _ = holder.gamma


def test_registration_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="the input must be a tensor"):
            AddBias("bias", [1.0, 2.0])
        with pytest.raises(TypeError, match=r"AddBias\('bias'\) needs an input tensor"):
            AddBias("bias")
    with pytest.raises(ValueError, match="cannot be named 'tf'"):
        layer_register()(types.FunctionType(AddBias.__wrapped__.__code__, {}, "tf"))
    with pytest.raises(TypeError, match="argscope does not support"):
        with argscope(tf.nn.relu, name="x"):
            pass


def test_argscope_nests_and_applies_to_several_layers():
    with argscope([Conv2D, FullyConnected], activation=tf.nn.relu):
        with argscope(Conv2D, filters=8):
            assert get_arg_scope()["Conv2D"] == {"activation": tf.nn.relu, "filters": 8}
            assert get_arg_scope()["FullyConnected"] == {"activation": tf.nn.relu}
        assert get_arg_scope()["Conv2D"] == {"activation": tf.nn.relu}


def test_enable_argscope_for_function_and_module(log_lines):
    def scale(x, factor=1.0):
        return x * factor

    module = types.ModuleType("mylayers")
    module.scale = scale
    enable_argscope_for_module(module)
    wrapped = enable_argscope_for_function(scale, log_shape=False)
    with tf.Graph().as_default():
        x = tf.ones([2, 3])
        with argscope([module.scale, wrapped], factor=4.0):
            a, b = module.scale(x), wrapped(x)
        with tfv1.Session() as sess:
            assert sess.run(a)[0, 0] == 4.0 and sess.run(b)[0, 0] == 4.0
    assert log_lines == ["'scale'     : [2, 3] --> [2, 3]"]


def test_linearwrap_chains_layers_and_tf_functions():
    x = np.random.RandomState(0).rand(2, 4, 4, 1).astype(np.float32)
    with tf.Graph().as_default():
        image = tfv1.placeholder(tf.float32, x.shape)
        skip = tf.zeros([2, 2, 2, 3])
        out = (LinearWrap(image)
               .Conv2D("conv0", 2, 3, activation=tf.nn.relu)
               .MaxPooling("pool0", 2)
               .ConcatWith(skip, 3)
               .tf.nn.relu()
               .apply(tf.multiply, 2.0)
               .apply2(FullyConnected, "fc", 5)())
        assert out.name == "fc/output:0" and out.shape.as_list() == [2, 5]
        assert LinearWrap(image).tensor() is image
        with pytest.raises(AttributeError, match="neither a registered layer nor 'tf'"):
            _ = LinearWrap(image).Conv2d
        concat = ConcatWith("cat", image, [image, image], 3)
        assert concat.shape.as_list() == [2, 4, 4, 3]


def test_linearwrap_tf_falls_back_to_tensorflow_1_names():
    # tensorpack's BEGAN chains .tf.image.resize_nearest_neighbor, which TensorFlow 2 removed.
    with tf.Graph().as_default():
        image = tfv1.placeholder(tf.float32, [2, 4, 4, 1])
        out = LinearWrap(image).tf.image.resize_nearest_neighbor([8, 8], align_corners=True)()
        assert out.op.type == "ResizeNearestNeighbor" and out.shape.as_list() == [2, 8, 8, 1]
        assert LinearWrap(image).tf.nn.relu()().op.type == "Relu"
        with pytest.raises(AttributeError, match="TensorFlow has no 'no_such_op'"):
            _ = LinearWrap(image).tf.image.no_such_op
