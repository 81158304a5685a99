"""argscope as tensorpack's ``tfutils.argscope`` module: the import paths its examples use."""
import importlib

from tfloop import tfv1
from tfloop.models import Conv2D


def test_tfutils_binds_the_functions_and_the_module_holds_them():
    from tfloop.tfutils import argscope, get_arg_scope
    from tfloop.tfutils.argscope import argscope as module_argscope
    from tfloop.tfutils.argscope import get_arg_scope as module_get_arg_scope

    module = importlib.import_module("tfloop.tfutils.argscope")
    assert argscope is module_argscope is module.argscope and callable(argscope)
    assert get_arg_scope is module_get_arg_scope
    import tfloop
    assert tfloop.argscope is argscope and tfloop.models.argscope is argscope


def test_argscope_from_tfutils_sets_layer_defaults():
    from tfloop.tfutils.argscope import argscope, get_arg_scope
    with tfv1.Graph().as_default():
        x = tfv1.placeholder(tfv1.float32, [None, 8, 8, 3])
        with argscope(Conv2D, kernel_size=3, filters=5, use_bias=False):
            assert get_arg_scope()["Conv2D"] == {"kernel_size": 3, "filters": 5, "use_bias": False}
            y = Conv2D("conv", x)
        assert get_arg_scope()["Conv2D"] == {}
        kernel, = tfv1.trainable_variables()
    assert y.shape.as_list() == [None, 8, 8, 5]
    assert kernel.shape.as_list() == [3, 3, 3, 5]
