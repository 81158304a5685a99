"""One ``session.run`` that carries the extra fetches and feeds of a list of hooks.

This is the hot path of training: every step is exactly one call of :meth:`HookedSession.run`.
"""
from tfloop.compat import tfv1

__all__ = ["HookedSession", "merge_run_options"]

SessionRunArgs = tfv1.train.SessionRunArgs
SessionRunContext = tfv1.train.SessionRunContext
SessionRunValues = tfv1.train.SessionRunValues


def merge_run_options(base, extra):
    """Merge two ``RunOptions`` protos (either may be None): the larger trace level wins."""
    if extra is None:
        return base
    if base is None:
        merged = tfv1.RunOptions()
        merged.CopyFrom(extra)
        return merged
    merged = tfv1.RunOptions()
    merged.CopyFrom(base)
    trace_level = max(base.trace_level, extra.trace_level)
    merged.MergeFrom(extra)
    merged.trace_level = trace_level
    return merged


class HookedSession:
    """A session whose ``run`` also runs the hooks' ``before_run``/``after_run``.

    Each hook has ``before_run(run_context) -> SessionRunArgs | None`` and
    ``after_run(run_context, run_values)``. All hooks' fetches and feeds are merged into a single
    ``session.run`` together with the caller's own fetches; each hook's ``after_run`` receives
    exactly the results of its own fetches.

    Args:
        sess (tf.compat.v1.Session): the raw session.
        hooks (list): objects with ``before_run`` and ``after_run`` (e.g. callbacks).

    Example:
        >>> hooked = HookedSession(sess, [callback_a, callback_b])
        >>> hooked.run(train_op)       # one session.run with everyone's fetches
    """

    def __init__(self, sess, hooks):
        self.sess = sess
        self.graph = sess.graph
        self._hooks = list(hooks)
        self.stop_requested = False

    @property
    def hooks(self):
        return tuple(self._hooks)

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run ``fetches`` with every hook's extra fetches and feeds; returns ``fetches``' values."""
        hooks = self._hooks
        if not hooks:
            return self.sess.run(fetches, feed_dict=feed_dict, options=options,
                                 run_metadata=run_metadata)
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self.sess)
        extra_fetches = []
        slots = []
        for hook in hooks:
            args = hook.before_run(ctx)
            if args is None or args.fetches is None:
                slots.append(-1)
            else:
                slots.append(len(extra_fetches))
                extra_fetches.append(args.fetches)
            if args is None:
                continue
            if args.feed_dict:
                feed_dict = self._merge_feeds(hook, feed_dict, ctx.original_args.feed_dict,
                                              args.feed_dict)
            if args.options is not None:
                options = merge_run_options(options, args.options)
        if options is not None and run_metadata is None:
            run_metadata = tfv1.RunMetadata()
        main_result, extra_results = self.sess.run(
            ([] if fetches is None else fetches, extra_fetches), feed_dict=feed_dict,
            options=options, run_metadata=run_metadata)
        for hook, slot in zip(hooks, slots):
            hook.after_run(ctx, SessionRunValues(
                results=None if slot < 0 else extra_results[slot], options=options,
                run_metadata=run_metadata))
        if ctx.stop_requested:
            self.stop_requested = True
        return None if fetches is None else main_result

    @staticmethod
    def _merge_feeds(hook, feed_dict, original, extra):
        if feed_dict is None:
            feed_dict = {}
        elif feed_dict is original:
            feed_dict = dict(feed_dict)
        for key, value in extra.items():
            if key in feed_dict:
                raise ValueError("{} feeds {} which is already fed by another hook or the caller."
                                 .format(hook, getattr(key, "name", key)))
            feed_dict[key] = value
        return feed_dict
