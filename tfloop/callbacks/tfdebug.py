"""TFLocalCLIDebugHook: TensorFlow's interactive debugger (tfdbg) on the training steps."""
from tfloop.callbacks.hooks import HookToCallback

__all__ = ["TFLocalCLIDebugHook"]


class TFLocalCLIDebugHook(HookToCallback):
    """Run the training steps under TensorFlow's command-line debugger (``LocalCLIDebugHook``);
    it takes over the terminal, so use it in an interactive session only.

    Args:
        args, kwargs: passed to ``tensorflow.python.debug.LocalCLIDebugHook``.

    Example:
        >>> cb = TFLocalCLIDebugHook()
        >>> cb.add_tensor_filter("has_inf_or_nan", tf_debug.has_inf_or_nan)
    """

    def __init__(self, *args, **kwargs):
        self._filters = []

        def build():
            from tensorflow.python.debug.wrappers.hooks import LocalCLIDebugHook
            hook = LocalCLIDebugHook(*args, **kwargs)
            for name, callback in self._filters:
                hook.add_tensor_filter(name, callback)
            return hook
        super().__init__(build)

    def add_tensor_filter(self, filter_name, filter_callback):
        """Add a tfdbg tensor filter (before training starts)."""
        self._filters.append((filter_name, filter_callback))
