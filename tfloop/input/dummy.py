"""DummyConstantInput: the same random batch every step, to measure a model without input costs."""
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource, describe_spec

__all__ = ["DummyConstantInput"]


class DummyConstantInput(InputSource):
    """Inputs that are fixed random tensors living on the device (for benchmarks).

    Args:
        shapes (list[list[int]]): the full shape of each input; defaults to the input signature's
            shapes, which then must be fully defined.

    Example:
        >>> TrainConfig(model=MyModel(), data=DummyConstantInput([[64, 784], [64]]),
        ...             steps_per_epoch=100)
    """

    def __init__(self, shapes=None):
        self._shapes = shapes

    def _setup(self, input_signature):
        shapes = self._shapes
        if shapes is None:
            shapes = [s.shape for s in input_signature]
        if len(shapes) != len(input_signature):
            raise ValueError(f"DummyConstantInput got {len(shapes)} shapes for "
                             f"{len(input_signature)} inputs.")
        self._tensors = []
        with tf.name_scope("DummyConstantInput"):
            for shape, spec in zip(shapes, input_signature):
                shape = tf.TensorShape(shape)
                if not shape.is_fully_defined() or not shape.is_compatible_with(spec.shape):
                    raise ValueError("DummyConstantInput needs a full shape compatible with input "
                                     f"{describe_spec(spec)}, got {shape}.")
                if spec.dtype.is_floating:
                    init = tfv1.random_uniform(shape, dtype=spec.dtype)
                elif spec.dtype.is_integer:
                    init = tfv1.random_uniform(shape, maxval=2, dtype=spec.dtype)
                else:
                    init = tf.zeros(shape, dtype=spec.dtype)
                var = tfv1.Variable(init, trainable=False, name="dummy_" + (spec.name or "input"),
                                    collections=[tfv1.GraphKeys.LOCAL_VARIABLES])
                self._tensors.append(tf.identity(var, name=spec.name or None))

    def _get_input_tensors(self):
        return list(self._tensors)

    def size(self):
        return None
