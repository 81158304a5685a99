"""tensorpack's ``models.shape_utils``, at its path; it exports no public name (tensorpack's
``__all__`` is empty). Static and dynamic shapes: ``tensor.shape`` and ``tf.shape(tensor)``.

:class:`StaticDynamicShape` is imported by layers copied from tensorpack's source (its
``FixedUnPooling``).
"""
__all__ = []


class StaticDynamicShape:
    """A tensor's shape, each axis known statically (an int) or only at run time (a scalar
    tensor), through functions applied to the axes: a static axis stays static as long as the
    function takes an int.

    Args:
        tensor (tf.Tensor): the tensor whose shape to follow.

    Example:
        >>> shape = StaticDynamicShape(x)             # x: [None, 3, None, 10]
        >>> shape.apply(1, lambda d: d * 2)
        >>> shape.get_static()
        [None, 6, None, 10]
        >>> output_shape = shape.get_dynamic()        # ints and scalar tensors
    """

    def __init__(self, tensor):
        from tfloop.compat import tf
        if not isinstance(tensor, tf.Tensor) or tensor.shape.rank is None:
            raise TypeError(f"StaticDynamicShape needs a tensor of known rank, got {tensor!r}.")
        self.static = tensor.shape.as_list()
        runtime = None if tensor.shape.is_fully_defined() else tf.shape(tensor)
        self._dynamic = [self._constant(d) if d is not None else self._axis_of(runtime, k)
                         for k, d in enumerate(self.static)]

    @staticmethod
    def _constant(value):
        return lambda: value

    @staticmethod
    def _axis_of(runtime, k):
        return lambda: runtime[k]

    @property
    def ndims(self):
        return len(self.static)

    def apply(self, axis, f):
        """Replace axis ``axis`` by ``f(axis)``: computed now when the axis is static and ``f``
        takes an int, else at run time on the tensor."""
        if self.static[axis] is not None:
            try:
                value = f(self.static[axis])
            except TypeError:
                pass
            else:
                self.static[axis] = value
                self._dynamic[axis] = self._constant(value)
                return
        self.static[axis] = None
        before = self._dynamic[axis]
        self._dynamic[axis] = lambda: f(before())

    def get_static(self):
        """The static shape: ints, and None for an axis known only at run time."""
        return self.static

    def get_dynamic(self, axis=None):
        """The shape (or axis ``axis``) as ints and scalar tensors."""
        if axis is None:
            return [d() for d in self._dynamic]
        return self._dynamic[axis]()
