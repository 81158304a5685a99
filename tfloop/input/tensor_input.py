"""TensorInput: inputs made by a function that returns tensors (e.g. from a reader op)."""
from tfloop.compat import tf
from tfloop.input.base import InputSource, describe_spec
from tfloop.utils.checks import check_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["TensorInput"]


class TensorInput(InputSource):
    """Take each tower's inputs from ``get_tensor_fn()``, called once per tower inside the graph.

    Args:
        get_tensor_fn (callable): returns a list of tensors, one per input, in the order of
            ``inputs()``.
        size (int): the steps of one epoch, if known (the default ``steps_per_epoch``).

    Example:
        >>> def inputs():
        ...     return [tf.random.normal([32, 10]), tf.zeros([32], tf.int32)]
        >>> TrainConfig(model=MyModel(), data=TensorInput(inputs), steps_per_epoch=100)
    """

    def __init__(self, get_tensor_fn, size=None):
        if not callable(get_tensor_fn):
            raise TypeError(f"TensorInput needs a function returning tensors, got "
                            f"{get_tensor_fn!r}.")
        self._fn = get_tensor_fn
        self._size = check_int(tensorpack_int(size, "TensorInput: size"), "TensorInput: size",
                               at_least=1, allow_none=True)
        self._signature = None

    def _setup(self, input_signature):
        self._signature = list(input_signature)

    def _get_input_tensors(self):
        tensors = self._fn()
        if not isinstance(tensors, (list, tuple)) or len(tensors) != len(self._signature):
            raise ValueError(f"TensorInput: the function must return a list of "
                             f"{len(self._signature)} tensors (one per input), got {tensors!r}.")
        checked = []
        for t, spec in zip(tensors, self._signature):
            t = tf.convert_to_tensor(t)
            if t.dtype != spec.dtype or not t.shape.is_compatible_with(spec.shape):
                raise ValueError(f"TensorInput: {t.name} ({t.dtype.name}, {t.shape}) does not "
                                 f"match input {describe_spec(spec)}.")
            checked.append(t)
        return checked

    def size(self):
        return self._size
