"""tensorpack's ``models.shape_utils``, at its path; it exports no public name (tensorpack's
``__all__`` is empty). Static and dynamic shapes: ``tensor.shape`` and ``tf.shape(tensor)``."""
__all__ = []
