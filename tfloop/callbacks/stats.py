"""tensorpack's ``callbacks.stats``, at its path; it holds no public name (tensorpack moved its
content to ``callbacks.misc`` and ``callbacks.graph``)."""
__all__ = []
