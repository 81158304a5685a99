"""LinearWrap: chain single-input layers and TensorFlow functions on one tensor."""
from types import ModuleType

from tfloop.compat import tf, tfv1
from tfloop.models.registry import get_registered_layer

__all__ = ["LinearWrap"]


class LinearWrap:
    """Wrap a tensor so that registered layers and ``tf`` functions chain as methods.

    ``.Conv2D('c', 32, 3)`` calls ``Conv2D('c', tensor, 32, 3)``; ``.tf.nn.relu()`` calls
    ``tf.nn.relu(tensor)``; calling the wrapper (or ``.tensor()``) returns the tensor.

    Args:
        tensor (tf.Tensor): the tensor to wrap.

    Example:
        >>> logits = (LinearWrap(image)
        ...           .Conv2D("conv0", 32, 3, activation=tf.nn.relu)
        ...           .MaxPooling("pool0", 2)
        ...           .FullyConnected("fc", 10)())
    """

    class _TFModuleFunc:
        """``.tf.<module>.<function>``: TensorFlow's function, or TensorFlow 1's where TensorFlow
        2 removed the name (``.tf.image.resize_nearest_neighbor`` of tensorpack's examples)."""

        def __init__(self, module, tensor, v1_module=None):
            self._module = module
            self._v1_module = v1_module
            self._t = tensor

        def __getattr__(self, name):
            v1_attr = getattr(self._v1_module, name, None)
            attr = getattr(self._module, name, v1_attr)
            if attr is None:
                raise AttributeError(f"LinearWrap: TensorFlow has no {name!r} in "
                                     f"{self._module.__name__}.")
            if isinstance(attr, ModuleType):
                v1_module = v1_attr if isinstance(v1_attr, ModuleType) else None
                return LinearWrap._TFModuleFunc(attr, self._t, v1_module)

            def call(*args, **kwargs):
                return LinearWrap(attr(self._t, *args, **kwargs))
            return call

    def __init__(self, tensor):
        self._t = tensor

    def __getattr__(self, layer_name):
        if layer_name.startswith("__"):
            raise AttributeError(layer_name)
        layer = get_registered_layer(layer_name)
        if layer is None:
            if layer_name != "tf":
                raise AttributeError(
                    f"LinearWrap.{layer_name}: neither a registered layer nor 'tf'. Did you "
                    f"forget to take the tensor out of the LinearWrap (call it: wrapped())?")
            return LinearWrap._TFModuleFunc(tf, self._t, tfv1)
        if layer.use_scope:
            def call_with_name(name, *args, **kwargs):
                return LinearWrap(layer(name, self._t, *args, **kwargs))
            return call_with_name

        def call(*args, **kwargs):
            if args and isinstance(args[0], str):
                return LinearWrap(layer(args[0], self._t, *args[1:], **kwargs))
            return LinearWrap(layer(self._t, *args, **kwargs))
        return call

    def apply(self, func, *args, **kwargs):
        """``LinearWrap(func(tensor, *args, **kwargs))``."""
        return LinearWrap(func(self._t, *args, **kwargs))

    def apply2(self, func, *args, **kwargs):
        """``LinearWrap(func(args[0], tensor, *args[1:], **kwargs))``: for functions that take a
        name first, as layers do."""
        return LinearWrap(func(args[0], self._t, *args[1:], **kwargs))

    def __call__(self):
        """The wrapped tensor."""
        return self._t

    def tensor(self):
        """The wrapped tensor."""
        return self._t

    def print_tensor(self):
        """Print the wrapped tensor (to see its name); returns self."""
        print(self._t)
        return self
