"""Bridges between tfloop callbacks and TensorFlow's ``SessionRunHook``."""
from tfloop.callbacks.base import Callback
from tfloop.callbacks.timetable import Timetable
from tfloop.compat import tf, tfv1

__all__ = ["CallbackToHook", "HookToCallback", "SessionTrainer", "TFLocalCLIDebugHook"]


def _graph_elements(value, depth=2):
    """``(path, element)`` for the tensors, operations and variables in ``value``, looking into
    lists, tuples, dicts and (``depth`` levels of) object attributes."""
    if isinstance(value, (tf.Tensor, tf.Operation, tf.Variable)):
        yield "", value
        return
    for step, item, item_depth in _children(value, depth):
        for path, element in _graph_elements(item, item_depth):
            yield f"{step}{path}", element


def _children(value, depth):
    """``(path step, item, depth left)`` for what ``value`` holds: the items of a dict, list or
    tuple, or the attributes of an object (which uses up one level of ``depth``)."""
    if isinstance(value, dict):
        return [(f"[{key!r}]", item, depth) for key, item in value.items()]
    if isinstance(value, (list, tuple)):
        return [(f"[{index}]", item, depth) for index, item in enumerate(value)]
    if depth > 0 and hasattr(value, "__dict__") and not isinstance(value, type):
        return [(f".{name}", item, depth - 1) for name, item in vars(value).items()]
    return []


def _graph_of(element):
    try:
        return element.graph
    except (AttributeError, RuntimeError):
        return None                  # an eager tensor or variable


class HookToCallback(Callback):
    """Use any ``tf.compat.v1.train.SessionRunHook`` as a callback.

    ``begin`` runs in ``setup_graph``, ``after_create_session`` in ``before_train``,
    ``before_run``/``after_run`` with every step, and ``end`` in ``after_train``. A hook's
    ``run_context.request_stop()`` ends training after that step.

    As the ``Scaffold`` of a ``MonitoredSession`` does, ``setup_graph`` puts a saver of the
    global variables into the graph's ``SAVERS`` collection when it has none, so a
    ``CheckpointSaverHook(checkpoint_dir, save_steps=...)`` written as TensorFlow documents it
    finds its saver (the variables are those that exist when this callback's ``setup_graph``
    runs).

    A hook that holds tensors must hold the trainer's: tensors built before training belong to
    another graph. Give a function that builds the hook instead; it is called in ``setup_graph``,
    with the trainer's graph as the default graph, where the model's tensors exist (look them up
    by name).

    Args:
        hook (SessionRunHook or callable): the hook, or a function without arguments that
            returns it.

    Example:
        >>> HookToCallback(tf.compat.v1.train.StopAtStepHook(last_step=1000))
        >>> HookToCallback(lambda: tf.compat.v1.train.NanTensorHook(
        ...     tf.compat.v1.get_default_graph().get_tensor_by_name("cost:0")))
    """

    _chief_only = False
    # Class defaults, for subclasses that set ``self._hook`` themselves without calling __init__.
    _factory = None
    _fetches_checked = False

    def __init__(self, hook):
        if isinstance(hook, tfv1.train.SessionRunHook):
            self._factory = None
        elif callable(hook):
            self._factory, hook = hook, None
        else:
            raise TypeError("HookToCallback needs a tf.compat.v1.train.SessionRunHook or a "
                            f"function that builds one, got {hook!r}.")
        self._hook = hook
        self._fetches_checked = False

    def _setup_graph(self):
        with self.graph.name_scope(None):
            if self._factory is not None:
                self._hook = self._factory()
                if not isinstance(self._hook, tfv1.train.SessionRunHook):
                    raise TypeError(f"The function given to HookToCallback returned "
                                    f"{self._hook!r}, not a tf.compat.v1.train.SessionRunHook.")
            self._check_graph(_graph_elements(self._hook), "holds")
            self._hook.begin()
            _supply_default_saver(self.graph)

    def _check_graph(self, elements, verb):
        for path, element in elements:
            if _graph_of(element) is self.graph:
                continue
            name = getattr(element, "name", type(element).__name__)
            hook = type(self._hook).__name__
            built = "eagerly" if _graph_of(element) is None else "in another graph"
            raise ValueError(
                f"HookToCallback: {hook} {verb} {name!r}{f' (in {path})' if path else ''}, which "
                f"was built {built}, not in the trainer's graph: tensors built before training "
                f"belong to another graph. Pass a function that builds the hook instead, called "
                f"inside the trainer's graph: HookToCallback(lambda: {hook}(...)), looking "
                f"tensors up by name there (e.g. "
                f"tf.compat.v1.get_default_graph().get_tensor_by_name('cost:0')).")

    def _before_run(self, ctx):
        args = self._hook.before_run(ctx)
        if not self._fetches_checked and args is not None:
            # Once: fetches of another graph would otherwise fail deep inside session.run.
            self._fetches_checked = True
            self._check_graph(_graph_elements((args.fetches, list(args.feed_dict or ())), 0),
                              "fetches")
        return args

    def _before_train(self):
        self._hook.after_create_session(self.trainer.sess, None)

    def _after_run(self, ctx, values):
        self._hook.after_run(ctx, values)

    def _after_train(self):
        self._hook.end(self.trainer.sess)

    def __str__(self):
        if self._hook is None:
            return f"HookToCallback({getattr(self._factory, '__name__', 'factory')})"
        return f"HookToCallback({type(self._hook).__name__})"


def _supply_default_saver(graph):
    """Add the saver a ``MonitoredSession``'s ``Scaffold`` would make to ``SAVERS`` when the
    collection is empty: sharded, V2, of every global variable (none is allowed)."""
    if graph.get_collection(tfv1.GraphKeys.SAVERS):
        return
    saver = tfv1.train.Saver(sharded=True, allow_empty=True,
                             write_version=tfv1.train.SaverDef.V2)
    graph.add_to_collection(tfv1.GraphKeys.SAVERS, saver)


class SessionTrainer:
    """What a callback run by :class:`CallbackToHook` sees as ``self.trainer``: the session, the
    graph and the global step; a trainer's other attributes do not exist outside tfloop's loop.

    Attributes:
        sess: the session the hook was given in ``after_create_session``.
        graph: the graph the hook began in.
    """

    def __init__(self, graph):
        self.graph = graph
        self.sess = None
        self.towers = None
        self._step = tfv1.train.get_global_step(graph)
        self._runs = 0

    @property
    def global_step(self) -> int:
        """The graph's global step (read from the session), or the number of runs so far when
        the graph has none."""
        if self._step is None or self.sess is None:
            return self._runs
        return int(self.sess.run(self._step))

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(
            f"{name!r}: a callback run by CallbackToHook in a session of your own sees only "
            "self.trainer.sess, .graph and .global_step; it needs tfloop's trainer for "
            f"{name!r} (train it with launch_train_with_config instead).")


class CallbackToHook(tfv1.train.SessionRunHook):
    """Run a callback as a ``SessionRunHook`` (e.g. in a ``MonitoredSession`` of your own).

    ``begin`` runs the callback's ``setup_graph`` (with a :class:`SessionTrainer` as its
    trainer), ``after_create_session`` its ``before_train``, every ``run`` its ``before_run``,
    ``after_run`` and ``trigger_step``, and ``end`` its ``after_train``. Its schedule (and those of
    what it wraps) is followed as in tfloop's loop, counting the graph's global step: e.g.
    ``PeriodicCallback(TensorPrinter(["cost"]), every_k_steps=100)`` prints with the runs that
    make it a multiple of 100. A callback needing more of the trainer (epochs, monitors) says
    which attribute it missed.

    Example:
        >>> with tf.compat.v1.train.MonitoredSession(
        ...         hooks=[CallbackToHook(TensorPrinter(["cost"]))]) as sess:
        ...     sess.run(train_op)
    """

    def __init__(self, cb):
        if not isinstance(cb, Callback):
            raise TypeError(f"CallbackToHook needs a Callback, got {cb!r}.")
        self._cb = cb
        self.trainer = None
        self._timetable = Timetable(())
        self._runs_with = False

    def begin(self):
        graph = tfv1.get_default_graph()
        self.trainer = SessionTrainer(graph)
        self._cb.setup_graph(self.trainer)
        self._timetable = Timetable([self._cb])

    def after_create_session(self, session, coord):
        self.trainer.sess = session
        self._timetable.start()
        self._cb.before_train()
        for _ in range(self._timetable.entries[0].before_train_triggers):
            self._cb.trigger()

    def before_run(self, run_context):
        timetable, step, epoch = self._timetable, 0, 0
        if not timetable.every_step:
            step = self.trainer.global_step
        if timetable.needs_epoch_at_steps:
            epoch = self.trainer.epoch_num      # an AttributeError naming it: there are none
        self._runs_with = bool(timetable.begin_step(step, step + 1, epoch, False))
        return self._cb.before_run(run_context) if self._runs_with else None

    def after_run(self, run_context, run_values):
        if self._runs_with:
            self._cb.after_run(run_context, run_values)
        self.trainer._runs += 1
        for cb, hook in self._timetable.step_calls:
            getattr(cb, hook)()

    def end(self, session):
        self._cb.after_train()


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
