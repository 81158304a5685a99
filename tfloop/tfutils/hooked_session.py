"""One ``session.run`` that carries the extra fetches and feeds of a list of hooks.

This is the hot path of training: every step is exactly one call of :meth:`HookedSession.run`.
Parsing a fetch structure costs ``Session.run`` a good part of a small model's step, so the session
keeps one ``Session.make_callable`` per distinct structure of fetches and calls that instead
whenever nothing is fed. The structure is read from the hooks' answers at every step, element by
element, so a hook may return a new list, another tensor or nothing from one step to the next:
each distinct answer gets its own callable, and results are never those of another structure.
A structure of tensors and operations gets TensorFlow's own callable (``Session::MakeCallable``,
as :mod:`tfloop.tfutils.fed_callable` makes for feeds): no Python fetch handling at all.
"""
import collections.abc

from tensorflow.core.protobuf import config_pb2
from tensorflow.python.client import session as tf_session

from tfloop.compat import tf, tfv1
from tfloop.tfutils.fetch_structure import mapping_builder, sequence_builder
from tfloop.utils.checks import check_int

__all__ = ["HookedSession", "merge_run_options"]

SessionRunArgs = tfv1.train.SessionRunArgs
SessionRunContext = tfv1.train.SessionRunContext
SessionRunValues = tfv1.train.SessionRunValues

_NO_VALUES = SessionRunValues(results=None, options=None, run_metadata=None)
_VALUE_TYPES = frozenset([str, bytes, int, float, bool])


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


def fetch_key(fetches):
    """A hashable key that is equal for two fetch structures exactly when they have the same
    nesting, container types and elements (compared by identity; names by value)."""
    cls = type(fetches)
    if cls is list or cls is tuple or isinstance(fetches, (list, tuple)):
        return (cls,) + tuple([fetch_key(f) for f in fetches])
    if isinstance(fetches, dict):
        return (cls,) + tuple([(_value_key(k), fetch_key(v)) for k, v in fetches.items()])
    if cls is str:
        return fetches
    return id(fetches)


def _value_key(key):
    return key if type(key) in _VALUE_TYPES else id(key)


def _leaves(fetches, out):
    if isinstance(fetches, (list, tuple)):
        for f in fetches:
            _leaves(f, out)
    elif isinstance(fetches, dict):
        for k, v in fetches.items():
            out.append(k)
            _leaves(v, out)
    else:
        out.append(fetches)
    return out


def _plan(fetches, flat):
    """Append the leaves of ``fetches`` (lists, tuples, named tuples and dicts of any dict type
    walked) to ``flat``; return how to rebuild the structure from the values of ``flat``: the
    leaf's index, or ``(builder, parts)`` where ``parts`` is a list for a sequence and a tuple of
    ``(key, part)`` for a mapping. None for a structure holding another container (a mapping
    that is not a dict), which is left to TensorFlow's fetch handling."""
    cls = type(fetches)
    if cls is list or cls is tuple:
        parts = [_plan(f, flat) for f in fetches]
        return None if None in parts else (cls, parts)
    if isinstance(fetches, (list, tuple)):
        parts = [_plan(f, flat) for f in fetches]
        return None if None in parts else (sequence_builder(fetches), parts)
    if isinstance(fetches, dict):
        pairs = tuple([(k, _plan(v, flat)) for k, v in fetches.items()])
        if any(p is None for _, p in pairs):
            return None
        return (dict if cls is dict else mapping_builder(fetches)), pairs
    if isinstance(fetches, collections.abc.Mapping):
        return None
    flat.append(fetches)
    return len(flat) - 1


def _renumber(plan, index):
    """``plan`` with each leaf index ``i`` replaced by ``index[i]``."""
    if type(plan) is int:
        return index[plan]
    build, parts = plan
    if type(parts) is tuple:
        return build, tuple([(k, _renumber(p, index)) for k, p in parts])
    return build, [_renumber(p, index) for p in parts]


def _graph_callable(sess, flat):
    """``(call, index)``: ``call()`` runs the graph elements ``flat`` in ``sess`` by TensorFlow's
    own callable and returns the tensors' values followed by a None, ``index[i]`` the position of
    the value of ``flat[i]`` in it (an operation's: the None). ``(None, None)`` unless ``sess`` is a
    ``tf.compat.v1.Session`` (not a wrapper) and ``flat`` is a non-empty list of its graph's
    tensors and operations."""
    if not flat or not isinstance(sess, tf_session.BaseSession) or not all(
            isinstance(f, (tf.Tensor, tf.Operation)) and f.graph is sess.graph for f in flat):
        return None, None
    tensors, index, targets = {}, [], []
    for f in flat:
        if isinstance(f, tf.Operation):
            index.append(-1)
            if f.name not in targets:
                targets.append(f.name)
        else:
            index.append(tensors.setdefault(f.name, len(tensors)))
    options = config_pb2.CallableOptions(fetch=list(tensors), target=targets)
    call = sess._make_callable_from_options(options)

    def fetched():
        values = call()
        values.append(None)
        return values
    return fetched, index


def _rebuild(plan, values):
    if type(plan) is int:
        return values[plan]
    build, parts = plan
    if build is list:
        return [_rebuild(p, values) for p in parts]
    if build is dict:
        return {k: _rebuild(p, values) for k, p in parts}
    if type(parts) is tuple:
        return build([(k, _rebuild(p, values)) for k, p in parts])
    return build([_rebuild(p, values) for p in parts])


class _CachedRun:
    """A session callable for one structure of fetches.

    The callable fetches the structure's leaves as one flat list (TensorFlow rebuilding a nested
    structure at every call costs it more than the rest of the call) and the structure is rebuilt
    here, with the same container types as ``Session.run`` gives (``fetch_structure.py``). It
    keeps every object whose identity is part of its key alive, so that no other object can take
    over one of those identities while the entry exists.
    """

    __slots__ = ("_fn", "_plan", "keep_alive")

    def __init__(self, sess, fetches):
        self.keep_alive = _leaves(fetches, [])
        flat = []
        self._plan = _plan(fetches, flat)
        self._fn = None
        if self._plan is not None:
            self._fn, index = _graph_callable(sess, flat)
            if self._fn is not None:
                self._plan = _renumber(self._plan, index)
        if self._fn is None:
            self._fn = sess.make_callable(flat if self._plan is not None else fetches)

    def __call__(self):
        if self._plan is None:
            return self._fn()
        return _rebuild(self._plan, self._fn())


class HookedSession:
    """A session whose ``run`` also runs the hooks' ``before_run``/``after_run``.

    Each hook has ``before_run(run_context) -> SessionRunArgs | None`` and
    ``after_run(run_context, run_values)``. All hooks' fetches and feeds are merged into a single
    session call together with the caller's own fetches; each hook's ``after_run`` receives
    exactly the results of its own fetches.

    A structure of fetches seen a second time gets its own ``Session.make_callable``, kept for
    the following runs (up to ``max_callables`` of them; beyond that, the oldest is released);
    the first run of a structure uses ``Session.run``. Runs that feed values or pass ``options``
    or ``run_metadata`` always use ``Session.run`` (a callable takes neither).

    Args:
        sess (tf.compat.v1.Session): the raw session.
        hooks (list): objects with ``before_run`` and ``after_run`` (e.g. callbacks); setting
            :attr:`hooks` replaces them for the following runs.
        max_callables (int): how many fetch structures keep a callable.

    Example:
        >>> hooked = HookedSession(sess, [callback_a, callback_b])
        >>> hooked.run(train_op)       # one session call with everyone's fetches
    """

    def __init__(self, sess, hooks, max_callables=32):
        max_callables = check_int(max_callables, "max_callables", at_least=0)
        self.sess = sess
        self.graph = sess.graph
        self._hooks = tuple(hooks)
        self.stop_requested = False
        self._max_callables = max_callables
        self._cache = {}
        self._seen_once = {}

    @property
    def hooks(self):
        """The hooks of the next runs; the trainer sets each step's (the callbacks due at it)."""
        return self._hooks

    @hooks.setter
    def hooks(self, hooks):
        self._hooks = tuple(hooks)

    @property
    def num_callables(self):
        """How many fetch structures currently have a cached callable."""
        return len(self._cache)

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Run ``fetches`` with every hook's extra fetches and feeds; return ``fetches``' values."""
        hooks = self._hooks
        ctx = SessionRunContext(SessionRunArgs(fetches, feed_dict, options), self.sess)
        extra_fetches = []
        slots = []
        for hook in hooks:
            args = hook.before_run(ctx)
            if args is None:
                slots.append(-1)
                continue
            if args.fetches is None:
                slots.append(-1)
            else:
                slots.append(len(extra_fetches))
                extra_fetches.append(args.fetches)
            if args.feed_dict or args.options is not None:
                feed_dict, options = self._merge_feeds_and_options(hook, args, ctx, feed_dict,
                                                                   options)
        all_fetches = ([] if fetches is None else fetches, extra_fetches)
        plain = options is None and run_metadata is None
        if plain:
            main_result, extra_results = self._call(all_fetches, feed_dict)
        else:
            run_metadata = tfv1.RunMetadata() if run_metadata is None else run_metadata
            main_result, extra_results = self.sess.run(
                all_fetches, feed_dict=feed_dict, options=options, run_metadata=run_metadata)
        for hook, slot in zip(hooks, slots):
            if slot < 0 and plain:
                values = _NO_VALUES
            else:
                values = SessionRunValues(results=None if slot < 0 else extra_results[slot],
                                          options=options, run_metadata=run_metadata)
            hook.after_run(ctx, values)
        if ctx.stop_requested:
            self.stop_requested = True
        return None if fetches is None else main_result

    def _call(self, fetches, feed_dict):
        if feed_dict:
            return self.sess.run(fetches, feed_dict=feed_dict)
        key = fetch_key(fetches)
        entry = self._cache.get(key)
        if entry is None:
            if self._max_callables == 0 or key not in self._seen_once:
                if self._max_callables:
                    self._remember(self._seen_once, key, 4 * self._max_callables)
                return self.sess.run(fetches)
            del self._seen_once[key]
            entry = _CachedRun(self.sess, fetches)
            self._remember(self._cache, key, self._max_callables, entry)
        return entry()

    @staticmethod
    def _remember(table, key, limit, value=None):
        if len(table) >= limit:
            del table[next(iter(table))]
        table[key] = value

    def _merge_feeds_and_options(self, hook, args, ctx, feed_dict, options):
        """Add ``hook``'s feeds and run options (``args``) to those of the run so far."""
        if args.feed_dict:
            feed_dict = self._merge_feeds(hook, feed_dict, ctx.original_args.feed_dict,
                                          args.feed_dict)
        if args.options is not None:
            options = merge_run_options(options, args.options)
        return feed_dict, options

    @staticmethod
    def _merge_feeds(hook, feed_dict, original, extra):
        if feed_dict is None:
            feed_dict = {}
        elif feed_dict is original:
            feed_dict = dict(feed_dict)
        for key, value in extra.items():
            if key in feed_dict:
                raise ValueError(f"{hook} feeds {getattr(key, 'name', key)} which is already fed "
                                 "by another hook or the caller.")
            feed_dict[key] = value
        return feed_dict
