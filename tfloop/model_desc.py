"""ModelDesc: the model's inputs, its graph (a tower function) and its optimizer."""
from typing import Any

from tfloop.compat import tf, tfv1
from tfloop.input.base import check_input_signature
from tfloop.tfutils.tower import get_current_tower_context

__all__ = ["ModelDesc", "ModelDescBase", "InputDesc"]


def InputDesc(type: Any, shape: Any, name: str) -> Any:  # noqa: N802  (tensorpack 0.9's name)
    """tensorpack 0.9's description of an input: the ``tf.TensorSpec(shape, type, name)`` that
    ``inputs()`` may return (tensorpack 0.9.x also made this TensorSpec).

    Example:
        >>> InputDesc(tf.float32, (None, 28, 28), "image")
        TensorSpec(shape=(None, 28, 28), dtype=tf.float32, name='image')
    """
    return tf.TensorSpec(shape, tf.as_dtype(type), name=name)


def _placeholder_as_spec(tensor, index):
    """The TensorSpec of a placeholder returned by ``inputs()``."""
    if tensor.op.type not in ("Placeholder", "PlaceholderWithDefault"):
        raise TypeError(f"inputs() must return a list of tf.TensorSpec (or tensorpack's "
                        f"tf.compat.v1.placeholder); item {index} is {tensor.name}, made by a "
                        f"{tensor.op.type} op. Return tf.TensorSpec(shape, dtype, name) for it.")
    return tf.TensorSpec(tensor.shape, tensor.dtype, name=tensor.op.name)


class ModelDescBase:
    """A model's inputs and tower function, without an optimizer (e.g. for inference)."""

    def inputs(self) -> list[Any]:
        """Return the model's inputs as a list of ``tf.TensorSpec`` with names."""
        raise TypeError(f"{type(self).__name__} must define inputs() returning a list of "
                        "tf.TensorSpec.")

    def get_input_signature(self) -> list[Any]:
        """The checked input signature, a list of ``tf.TensorSpec``.

        ``inputs()`` may return ``tf.TensorSpec``s or, in tensorpack 0.9's style,
        ``tf.compat.v1.placeholder``s: it is called in a temporary graph of its own (as tensorpack
        does), so placeholders work in eager mode and never land in a trainer's or predictor's
        graph; each becomes a TensorSpec with its shape, dtype and name.
        """
        with tf.Graph().as_default():
            specs = self.inputs()
            if not isinstance(specs, (list, tuple)):
                raise TypeError(f"{type(self).__name__}.inputs() must return a list of "
                                f"tf.TensorSpec, got {specs!r}.")
            specs = [_placeholder_as_spec(s, i) if tf.is_symbolic_tensor(s) else s
                     for i, s in enumerate(specs)]
        return check_input_signature(specs)

    def get_inputs_desc(self) -> list[Any]:
        """tensorpack 0.9's name of :meth:`get_input_signature`."""
        return self.get_input_signature()

    @property
    def training(self) -> bool:
        """Whether ``build_graph`` is being called to train (True) or for inference (False)."""
        ctx = get_current_tower_context()
        if ctx is None:
            raise RuntimeError(f"{type(self).__name__}.training is only known inside build_graph "
                               f"(in a TowerContext).")
        return ctx.is_training

    @property
    def input_names(self) -> list[str]:
        return [s.name for s in self.get_input_signature()]

    def build_graph(self, *inputs: Any) -> Any:
        """Build the model from its input tensors and return the cost (a scalar) when training."""
        raise TypeError(f"{type(self).__name__} must define build_graph(*inputs).")


class ModelDesc(ModelDescBase):
    """Describe a model to train: ``inputs()``, ``build_graph(*inputs) -> cost``, ``optimizer()``.

    ``build_graph`` is the tower function: the trainer calls it inside a ``TowerContext``, once
    per device, and again for inference towers (``get_current_tower_context().is_training`` is
    False there). Create variables with ``tf.compat.v1.get_variable`` (or ``tfloop.models``
    layers) so that towers share them.

    Example:
        >>> class Linear(ModelDesc):
        ...     def inputs(self):
        ...         return [tf.TensorSpec([None, 3], tf.float32, "x"),
        ...                 tf.TensorSpec([None], tf.float32, "y")]
        ...     def build_graph(self, x, y):
        ...         w = tf.compat.v1.get_variable("w", [3, 1])
        ...         pred = tf.squeeze(tf.matmul(x, w), 1)
        ...         return tf.reduce_mean(tf.square(pred - y), name="cost")
        ...     def optimizer(self):
        ...         return tf.compat.v1.train.GradientDescentOptimizer(0.1)
    """

    _optimizer = None
    _optimizer_graph = None

    def optimizer(self) -> Any:
        """Return a ``tf.compat.v1.train.Optimizer``."""
        raise TypeError(f"{type(self).__name__} must define optimizer().")

    def get_optimizer(self) -> Any:
        """The optimizer, created once per graph (later calls in that graph return the same one)."""
        graph = tfv1.get_default_graph()
        if self._optimizer is None or self._optimizer_graph is not graph:
            self._optimizer = self.optimizer()
            self._optimizer_graph = graph
        return self._optimizer


