"""The Trainer: builds the graph once, runs callbacks around one ``session.run`` per step."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.callbacks.flow import StopEpoch
from tfloop.callbacks.group import Callbacks
from tfloop.callbacks.steps import MaintainStepCounter
from tfloop.compat import tf
from tfloop.input.base import InputSource
from tfloop.monitors.base import MonitorBase, Monitors
from tfloop.resume.preemption import SignalHandler
from tfloop.resume.restore import restore_run_state
from tfloop.resume.session_init import ResumeInit
from tfloop.tfutils.eager_capture import explain_eager_capture
from tfloop.tfutils.hooked_session import HookedSession
from tfloop.tfutils.model_utils import describe_trainable_vars
from tfloop.tfutils.sesscreate import default_session_config
from tfloop.tfutils.sessinit import JustCurrentSession, SessionInit
from tfloop.train.callback_list import (
    check_each_used_once,
    checked_callbacks,
    checked_monitors,
)
from tfloop.train.defaults import (
    check_no_default_twice,
    default_callbacks_besides,
    default_monitors,
    steps_per_epoch_of,
)
from tfloop.train.error_policy import TrainingErrorPolicy
from tfloop.train.final_weights import FinalWeightsOwner
from tfloop.train.logdir import RunLogDir
from tfloop.train.loop import TrainLoop
from tfloop.train.loop_view import LoopView
from tfloop.train.options import OptionsOwner
from tfloop.train.passes import PassesOwner
from tfloop.train.run_state import RunStateOwner
from tfloop.train.run_status import RunStatusRecorder
from tfloop.utils import logger

__all__ = ["Trainer", "StopTraining"]

_C = TypeVar("_C")


class _ConstructedInItsGraph(type):
    """The metaclass of :class:`Trainer`: ``SomeTrainer(...)`` makes the trainer's own graph,
    then runs the whole constructor (every subclass's ``__init__``) with that graph as the default
    graph, so a trainer that builds its model in its constructor, as tensorpack's GAN trainers
    do, builds it there."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        trainer = cast(Any, cls).__new__(cls)
        trainer.graph = tf.Graph()
        with trainer.graph.as_default():
            trainer.__init__(*args, **kwargs)
        return trainer


class Trainer(LoopView, RunStateOwner, OptionsOwner, RunLogDir, FinalWeightsOwner, PassesOwner,
              metaclass=_ConstructedInItsGraph):
    """Base class of trainers: a graph, a list of callbacks, and the main loop.

    The lifecycle of :meth:`train`: :meth:`setup_callbacks` (every callback's ``setup_graph``),
    :meth:`initialize` (session created, variables initialized or restored, graph finalized),
    :meth:`main_loop`. Subclasses build the training op in ``setup_graph``.

    Attributes:
        graph (tf.Graph): tfloop's own graph; the user's eager code is unaffected by it.
        sess: the raw session; ``hooked_sess``: the session whose ``run`` carries the callbacks'
            fetches; ``monitors``: the :class:`Monitors` dispatcher; ``loop``: the counters.
        training_error (BaseException): what ended the main loop with an error, set before
            ``after_train`` runs (None when training finished or a callback raised StopTraining),
            so ``after_train`` can tell a failed run (e.g. a NaN loss) from a clean end.
        stop_reason (str): why training stopped cleanly (the ``StopTraining`` message, or the
            signal), set before ``after_train`` runs; None otherwise.
        is_chief (bool): whether this process is the chief worker.
        options (RunOptions): the run's seed, precision, XLA and steps per session call, set with
            :meth:`set_options` before ``setup_graph`` and applied by the trainer as it builds.
        logdir (str): the run's log directory, where callbacks and monitors write (see
            :attr:`logdir`).
        final_weights (dict): the model's weights when :meth:`train` returned, which
            ``get_predictor`` predicts with after training (see :class:`FinalWeightsOwner`).
        epoch_end_listeners (list): functions of no argument called once every callback's
            ``trigger_epoch`` of an epoch ran, so they see all the round put (e.g. an
            ``InferenceRunner`` listed anywhere); one that calls :meth:`request_stop` ends
            training after that epoch, before any callback begins the next.
        loop_end_listeners (list): functions of no argument called when the main loop ended
            cleanly (it finished, or stopped), before any ``after_train``: ``ModelSaver`` saves
            its final checkpoint there, so it holds the weights of the last step whatever an
            ``after_train`` loads afterwards.

    Example:
        >>> trainer = SimpleTrainer()
        >>> trainer.set_options(RunOptions(seed=0))      # optional; before setup_graph
        >>> trainer.setup_graph(model.get_input_signature(), DatasetInput(make_dataset),
        ...                     model.build_graph, model.get_optimizer)
        >>> trainer.train_with_defaults(callbacks=[ModelSaver()], max_epoch=10)
    """

    is_chief: bool = True
    task: Any = None  # a cluster trainer's ClusterTask
    tower_func: Any = None  # a tower trainer's TowerFunc
    graph: Any  # made by the metaclass before __init__ runs

    def __init__(self) -> None:
        self.loop = TrainLoop()
        self.train_op: Any = None
        self.sess: Any = None
        self.hooked_sess: Any = None  # a HookedSession, from initialize() on
        self.monitors: Monitors | None = None
        self._input_source: InputSource | None = None
        self._model: Any = None
        self._optimizer: Any = None
        self._registered: list[Callback] = []
        self._callbacks: Any = None  # the Callbacks group, from setup_callbacks() on
        self.epoch_end_listeners: list[Callable[[], None]] = []
        self.loop_end_listeners: list[Callable[[], None]] = []
        self._init_run_state()
        self._init_options()
        self._init_final_weights()

    # ---- what the run is made of, read-only (for callbacks; Orca's runner attributes) ----------
    @property
    def model(self) -> Any:
        """The ``ModelDesc`` being trained (set by ``launch_train_with_config``), or None."""
        return self._model

    @property
    def input_source(self) -> InputSource | None:
        """The :class:`InputSource` the training steps take their inputs from."""
        return self._input_source

    @property
    def optimizer(self) -> Any:
        """The optimizer the training op was built with (after ``setup_graph``), or None."""
        return self._optimizer

    @property
    def rank(self) -> int:
        """This process's worker index in a cluster (0 for the chief and on one machine)."""
        return 0 if self.task is None else int(self.task.task_index)

    @property
    def num_workers(self) -> int:
        """The number of worker processes training together (1 on one machine)."""
        return 1 if self.task is None else int(self.task.num_workers)

    @property
    def towers(self) -> Any:
        """The towers built so far; None for a trainer without towers (a ``TowerTrainer`` has
        them)."""
        return None

    @property
    def callbacks(self) -> list[Callback]:
        """Every callback in the order they are called (after :meth:`setup_callbacks`)."""
        return list(self._callbacks) if self._callbacks is not None else list(self._registered)

    def callbacks_of(self, kind: type[_C]) -> list[_C]:
        """The callbacks that are a ``kind`` (an ``isinstance`` class), those inside wrappers
        (``PeriodicTrigger(ModelSaver())``) and groups too, in the order they are called.

        Example:
            >>> savers = trainer.callbacks_of(ModelSaver)
        """
        return [inner for cb in self.callbacks for inner in cb.walk() if isinstance(inner, kind)]

    @property
    def step_callbacks(self) -> tuple[Callback, ...]:
        """The callbacks called at ``trigger_step`` after each step, in order (after
        :meth:`setup_callbacks`; empty before)."""
        return self._callbacks.step_callbacks if self._callbacks is not None else ()

    @property
    def run_callbacks(self) -> tuple[Callback, ...]:
        """The callbacks whose ``before_run``/``after_run`` go with each step's ``session.run``,
        in order (after :meth:`setup_callbacks`; empty before)."""
        return self._callbacks.run_callbacks if self._callbacks is not None else ()

    def default_session_config(self) -> Any:
        """The session config the trainer needs, before the run's options and the user's
        ``session_config`` (multi-device trainers add devices)."""
        return default_session_config()

    # ---- building --------------------------------------------------------------------------------
    def register_callback(self, cb: Callback | Sequence[Callback]) -> bool:
        """Add a callback (or, as in tensorpack, a list of them); chief-only callbacks are
        skipped on non-chief workers.

        Returns:
            bool: whether it was added (for a list: whether all were).
        """
        if isinstance(cb, (list, tuple)):
            return all([self.register_callback(c) for c in cb])
        if not isinstance(cb, Callback):
            raise TypeError(f"register_callback needs a tfloop Callback, got {cb!r} "
                            f"({type(cb).__name__}).")
        if self._callbacks is not None:
            raise RuntimeError(f"Cannot register {cb} after the callbacks were set up.")
        if not self.is_chief and cb.chief_only:
            logger.warning(f"Callback {cb} is chief-only, skipped on this worker.")
            return False
        self._registered.append(cb)
        return True

    def setup_callbacks(self, callbacks: Callback | Iterable[Callback] | None,
                        monitors: MonitorBase | Iterable[MonitorBase] | None) -> None:
        """Order the callbacks and run every ``setup_graph``: the last chance to change the graph.

        Order: step counter, the watch on the ends of passes (when the epochs are passes),
        input/trainer callbacks, ``callbacks``, monitor backends, and the :class:`Monitors`
        dispatcher last.
        """
        callbacks = checked_callbacks(callbacks)
        monitors = checked_monitors(monitors)
        self._take_logdir()
        with self.graph.as_default():
            describe_trainable_vars()
            registered, self._registered = self._registered, []
            self.register_callback(MaintainStepCounter(self.loop))
            if self.loop.passes:
                self.register_callback(self._pass_end_watch())
            for cb in registered + callbacks:
                self.register_callback(cb)
            for m in monitors:
                self.register_callback(m)
            self.monitors = Monitors([m for m in monitors if m in self._registered])
            self.register_callback(self.monitors)
            check_each_used_once(self._registered, self)
            self._callbacks = Callbacks(self._registered)
            with explain_eager_capture("A callback's setup_graph"):
                self._callbacks.setup_graph(self)

    def initialize(self, session_creator: Any = None,
                   session_init: SessionInit | None = None) -> None:
        """Create the session, initialize or restore variables, and finalize the graph."""
        session_creator = self._options.session_creator(session_creator,
                                                        self.default_session_config())
        session_init = session_init or JustCurrentSession()
        if not isinstance(session_init, SessionInit):
            raise TypeError("session_init must be a SessionInit (e.g. SaverRestore), got "
                            f"{session_init!r}.")
        with self.graph.as_default():
            session_init.setup_graph()
        session_init.check_holds_the_model()
        with self._options.precision.rewriter_environment():
            self.sess = session_creator.create_session(self.graph)
            session_init.init(self.sess)
            if self._resume is not None:
                restore_run_state(self.sess, self._input_source, self.callbacks, *self._resume)
        self.graph.finalize()
        self.hooked_sess = HookedSession(self.sess, self._callbacks.run_hooks())

    # ---- running ---------------------------------------------------------------------------------
    def run_step(self) -> None:
        """Run one training step: one ``session.run`` of the training op with every callback's
        fetches."""
        self.hooked_sess.run(self.train_op)

    def main_loop(self, steps_per_epoch: int | None, starting_epoch: int,
                  max_epoch: int) -> None:
        """Run the epochs, calling the callbacks as ``docs/callbacks.md`` lists; how training ends
        (a stop, Ctrl-C, an error; ``after_train`` always) is :class:`TrainingErrorPolicy`'s."""
        loop, callbacks = self.loop, self._callbacks
        self._configure_loop(steps_per_epoch, starting_epoch, max_epoch)
        ending = TrainingErrorPolicy(loop, callbacks, self._input_source, self.loop_end_listeners,
                                     self.announce_checkpoints)
        with self._options.precision.rewriter_environment(), self.graph.as_default(), \
                self.sess.as_default(), self._final_weights_kept(), ending:
            callbacks.before_train()
            for _ in loop.epochs():
                callbacks.before_epoch()
                start = time.perf_counter()
                self._run_steps_of_epoch()
                callbacks.after_epoch()
                loop.end_epoch()
                logger.detail(f"Epoch {loop.epoch_num} (global step {loop.global_step}) finished, "
                              f"time: {time.perf_counter() - start:.2f} s.")
                callbacks.trigger_epoch()
                for listener in self.epoch_end_listeners:
                    listener()
                if loop.stop_requested:     # asked during the epoch's end: no further step
                    raise StopTraining(loop.stop_reason)
            logger.info("Training has finished.")

    def _run_steps_of_epoch(self) -> None:
        """The epoch's steps, each followed by ``trigger_step`` and a look at the stop requests;
        ``StopEpoch`` from a ``trigger_step`` ends them early."""
        loop, callbacks, hooked_sess = self.loop, self._callbacks, self.hooked_sess
        try:
            for _ in loop.runs_of_epoch():
                if self._unannounced:
                    self.announce_checkpoints()
                hooked_sess.hooks = callbacks.begin_step()   # the callbacks due at this step
                self.run_step()
                callbacks.trigger_step()
                if hooked_sess.stop_requested:
                    loop.request_stop(f"a callback requested a stop after step {loop.global_step}")
                if loop.stop_requested:
                    raise StopTraining(loop.stop_reason)
        except StopEpoch as stop:
            loop.running_steps = False
            loop.end_epoch_early()
            rest = "; the next epoch continues its pass over the data" if loop.passes else ""
            logger.info(f"Epoch {loop.epoch_num} ends early at global step {loop.global_step}: "
                        f"{str(stop) or 'StopEpoch'}{rest}")

    def train(self, callbacks: Callback | Iterable[Callback] | None,
              monitors: MonitorBase | Iterable[MonitorBase] | None,
              session_creator: Any, session_init: SessionInit | None,
              steps_per_epoch: int | None, starting_epoch: int = 1, max_epoch: int = 9999999,
              resume_from: str | None = None) -> None:
        """Set up callbacks, create the session and run the main loop; closes the session at end
        (the main loop kept the model's final weights in memory: :attr:`final_weights`).

        Args:
            steps_per_epoch (int): the steps of an epoch; None makes each epoch one pass over
                the data, for an input that says where its passes end (data of unknown length).
            resume_from (str): a checkpoint prefix whose run this one continues (see
                :meth:`continue_run_of`); its variables are restored by ``session_init``
                (``ResumeInit(resume_from)`` when None).
        """
        loop = self.loop
        loop.configure(steps_per_epoch, starting_epoch, max_epoch)
        if loop.passes:
            self._check_epochs_are_passes(self._input_source)
        self._take_logdir()
        if resume_from is not None:
            session_init = session_init or ResumeInit(resume_from)
            if not self.continue_run_of(resume_from):
                self._training_returned(f"the run of {resume_from} had already finished")
                return
        with RunStatusRecorder(self):    # <log dir>/status.json: running, then how it ended
            self.setup_callbacks(callbacks, monitors)
            signals = SignalHandler(self)
            self.initialize(session_creator, session_init)
            try:
                with signals:
                    self.main_loop(None if loop.passes else loop.steps_per_epoch,
                                   loop.starting_epoch, loop.max_epoch)
            finally:
                self.sess.close()
                self._training_returned()

    def train_with_defaults(self, callbacks: Callback | Iterable[Callback] | None = None,
                            extra_callbacks: Callback | Iterable[Callback] | None = None,
                            monitors: MonitorBase | Iterable[MonitorBase] | None = None,
                            session_creator: Any = None,
                            session_init: SessionInit | None = None,
                            steps_per_epoch: int | None = None, starting_epoch: int = 1,
                            max_epoch: int = 9999999, resume_from: str | None = None) -> None:
        """:meth:`train` with tfloop's default callbacks and monitors where none are given.

        Args:
            callbacks (list[Callback]): the user's callbacks.
            extra_callbacks (list[Callback]): replaces the default callbacks
                (``MovingAverageSummary``, ``ProgressBar``, ``MergeAllSummaries``,
                ``RunUpdateOps``).
            monitors (list[MonitorBase]): replaces the default monitors
                (``TFEventWriter``, ``JSONWriter``, ``ScalarPrinter``).
            steps_per_epoch (int): defaults to the input source's size, when it knows it;
                when it does not, each epoch is one pass over the data.
            resume_from (str): a checkpoint whose run this one continues (see :meth:`train`).
        """
        callbacks = checked_callbacks(callbacks)
        extra = default_callbacks_besides(callbacks) if extra_callbacks is None else (
            checked_callbacks(extra_callbacks, "extra_callbacks"))
        check_no_default_twice(callbacks + extra)
        monitors = (default_monitors() if monitors is None
                    else checked_monitors(monitors))
        if steps_per_epoch is None:
            steps_per_epoch = steps_per_epoch_of(self._input_source)
        self.train(callbacks + extra, monitors, session_creator, session_init, steps_per_epoch,
                   starting_epoch, max_epoch, resume_from)
