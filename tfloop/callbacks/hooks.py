"""Bridges between tfloop callbacks and TensorFlow's ``SessionRunHook``."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tfv1

__all__ = ["HookToCallback", "CallbackToHook"]


class HookToCallback(Callback):
    """Use any ``tf.compat.v1.train.SessionRunHook`` as a callback.

    ``begin`` runs in ``setup_graph``, ``after_create_session`` in ``before_train``,
    ``before_run``/``after_run`` with every step, and ``end`` in ``after_train``. A hook's
    ``run_context.request_stop()`` ends training after that step.

    Example:
        >>> HookToCallback(tf.compat.v1.train.StopAtStepHook(last_step=1000))
    """

    _chief_only = False

    def __init__(self, hook):
        if not isinstance(hook, tfv1.train.SessionRunHook):
            raise TypeError("HookToCallback needs a tf.compat.v1.train.SessionRunHook, got {!r}."
                            .format(hook))
        self._hook = hook

    def _setup_graph(self):
        with self.graph.name_scope(None):
            self._hook.begin()

    def _before_train(self):
        self._hook.after_create_session(self.trainer.sess, None)

    def _before_run(self, ctx):
        return self._hook.before_run(ctx)

    def _after_run(self, ctx, values):
        self._hook.after_run(ctx, values)

    def _after_train(self):
        self._hook.end(self.trainer.sess)

    def __str__(self):
        return "HookToCallback({})".format(type(self._hook).__name__)


class CallbackToHook(tfv1.train.SessionRunHook):
    """Use a callback's ``before_run``/``after_run`` as a ``SessionRunHook`` (e.g. in a
    ``MonitoredSession`` of your own).

    Example:
        >>> hook = CallbackToHook(my_callback)
    """

    def __init__(self, cb):
        if not isinstance(cb, Callback):
            raise TypeError("CallbackToHook needs a Callback, got {!r}.".format(cb))
        self._cb = cb

    def before_run(self, run_context):
        return self._cb.before_run(run_context)

    def after_run(self, run_context, run_values):
        self._cb.after_run(run_context, run_values)
