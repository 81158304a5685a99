"""tensorpack's ``train.utility``, at its path: a module of its internal helpers, with no public
name (it no longer imports in tensorpack 0.11 itself)."""
__all__ = []
