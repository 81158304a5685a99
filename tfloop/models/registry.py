"""Registering layers: the name-as-first-argument call, argscope, shape logging, VariableHolder.

A layer function registered with :func:`layer_register` is called as
``Layer("name", inputs, ...)``: it runs inside ``variable_scope(name)``, takes its default
arguments from the current :func:`argscope`, and logs its input and output shapes once per layer
(the first time it is built; later towers reuse the name and stay quiet).
"""
import functools
import re
import weakref

from tfloop.compat import tf, tfv1
from tfloop.tfutils.argscope import get_arg_scope, shape_str
from tfloop.tfutils.layer_scopes import record_layer_scope
from tfloop.utils import logger

__all__ = ["VariableHolder", "disable_layer_logging", "get_registered_layer", "layer_register"]

_REGISTRY = {}
_NAME_CONFLICT = object()
_TOWER_PREFIX = re.compile(r"tower[0-9]+/")
# Per graph: the layer scopes already logged. disable_layer_logging() silences every graph.
_LOGGED = weakref.WeakKeyDictionary()
_LOGGING_DISABLED = []


class VariableHolder:
    """The variables a layer created, as attributes of its output: ``out.variables.W``.

    Args:
        **variables: ``name=variable`` pairs.

    Example:
        >>> out = Conv2D("conv0", x, 32, 3)
        >>> out.variables.W, out.variables.b
        >>> out.variables.all()
    """

    def __init__(self, **variables):
        self._vars = {}
        for name, var in variables.items():
            self._add_variable(name, var)

    def _add_variable(self, name, var):
        if name in self._vars:
            raise ValueError(f"VariableHolder already holds a variable named {name!r}.")
        self._vars[name] = var

    def __setattr__(self, name, var):
        if name.startswith("_"):
            super().__setattr__(name, var)
        else:
            self._add_variable(name, var)

    def __getattr__(self, name):
        try:
            return self.__dict__["_vars"][name]
        except KeyError:
            raise AttributeError(
                f"The layer has no variable {name!r}; it has: "
                f"{', '.join(self.__dict__.get('_vars', {})) or 'none'}.") from None

    def all(self):
        """Every variable held, in the order they were added."""
        return list(self._vars.values())


def _register(name, func):
    if name == "tf":
        raise ValueError("A layer cannot be named 'tf' (LinearWrap uses .tf for TensorFlow ops).")
    _REGISTRY[name] = _NAME_CONFLICT if name in _REGISTRY else func
    if name == "Conv2DTranspose":
        _register("Deconv2D", func)


def get_registered_layer(name):
    """The registered layer called ``name`` (e.g. ``'Conv2D'``), or ``None``.

    Raises:
        KeyError: two layers were registered under that name.
    """
    layer = _REGISTRY.get(name)
    if layer is _NAME_CONFLICT:
        raise KeyError(f"More than one layer is registered as {name!r} with layer_register.")
    return layer


def disable_layer_logging():
    """Stop logging layer shapes, from now on, for every layer.

    Example:
        >>> disable_layer_logging()
    """
    _LOGGING_DISABLED.append(True)


class _ShapeLogger:
    """Logs ``'name': in --> out`` for a layer, and indents the lines of layers built inside it."""

    def __init__(self):
        self.pending = []
        self.depth = 0

    def reset(self):
        self.pending, self.depth = [], 0

    def push_inputs(self, name, shapes):
        while self.pending:  # an outer layer is calling this one: log its input first
            outer, outer_shapes = self.pending.pop()
            logger.detail(f"{'  ' * self.depth}'{outer}' input: {outer_shapes}")
            self.depth += 1
        self.pending.append((name, shapes))

    def push_outputs(self, name, shapes):
        if self.pending:
            _, in_shapes = self.pending.pop()
            logger.detail(f"{'  ' * self.depth}'{name}': {in_shapes} --> {shapes}")
        else:
            self.depth -= 1
            logger.detail(f"{'  ' * self.depth}'{name}' output: {shapes}")


_SHAPE_LOGGER = _ShapeLogger()


def _is_tensor(x):
    return isinstance(x, (tf.Tensor, tf.Variable))


def _split_call(layer, use_scope, args):
    """(scope name or None, inputs, remaining positional args) of a call."""
    if not args:
        raise TypeError(f"{layer} needs an input tensor.")
    if use_scope:
        if not isinstance(args[0], str):
            raise TypeError(f"{layer}: the first argument is the layer's name (a str), got "
                            f"{args[0]!r}. Did you forget the name, e.g. {layer}('name', x, ...)?")
        if len(args) < 2:
            raise TypeError(f"{layer}({args[0]!r}) needs an input tensor after its name.")
        return args[0], args[1], args[2:]
    if isinstance(args[0], str):
        if use_scope is False:
            logger.warning(f"{layer} takes no name: call it without the first (name) argument.")
        return args[0], args[1], args[2:]
    return None, args[0], args[1:]


def layer_register(log_shape=False, use_scope=True):
    """Decorator that makes a function a tensorpack-style layer.

    Args:
        log_shape (bool): log the input and output shapes the first time the layer is built.
        use_scope (bool or None): ``True``: the first argument is the layer's name and the
            function runs in ``variable_scope(name)``; ``False``: no name; ``None``: a name is
            optional (used when the first argument is a str).

    Example:
        >>> @layer_register(log_shape=True)
        ... def Scale(x, init=1.0):
        ...     return x * tf.compat.v1.get_variable(
        ...         "s", [], initializer=tf.constant_initializer(init))
        >>> y = Scale("scale0", x)        # variable scale0/s
    """
    def wrapper(func):
        layer = func.__name__

        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            name, inputs, args = _split_call(layer, use_scope, args)
            if not (_is_tensor(inputs) or (isinstance(inputs, (list, tuple)) and inputs and
                                           _is_tensor(inputs[0]))):
                raise TypeError(f"{layer}{'(' + repr(name) + ')' if name else ''}: the input "
                                f"must be a tensor (or a list of tensors), got {inputs!r}.")
            actual = dict(get_arg_scope()[layer], **kwargs)
            if name is None:
                return func(inputs, *args, **actual)
            with tfv1.variable_scope(name) as scope:
                record_layer_scope(layer)
                logged = _LOGGED.setdefault(tfv1.get_default_graph(), set())
                key = _TOWER_PREFIX.sub("", scope.name)
                log = log_shape and not _LOGGING_DISABLED and key not in logged
                if log:
                    _SHAPE_LOGGER.push_inputs(scope.name, shape_str(inputs))
                try:
                    outputs = func(inputs, *args, **actual)
                except BaseException:
                    _SHAPE_LOGGER.reset()
                    raise
                if log:
                    _SHAPE_LOGGER.push_outputs(scope.name, shape_str(outputs))
                    logged.add(key)
            return outputs

        wrapped.use_scope = use_scope
        wrapped.__argscope_enabled__ = True
        _register(layer, wrapped)
        return wrapped
    return wrapper
