"""The Trainer: builds the graph once, runs callbacks around one ``session.run`` per step."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.callbacks.flow import StopEpoch
from tfloop.callbacks.steps import MaintainStepCounter
from tfloop.compat import tf
from tfloop.input.base import InputSource
from tfloop.monitors.base import MonitorBase, Monitors
from tfloop.resume.preemption import SignalHandler
from tfloop.resume.session_init import ResumeInit
from tfloop.tfutils.hooked_session import HookedSession
from tfloop.tfutils.model_utils import describe_trainable_vars
from tfloop.tfutils.sesscreate import default_session_config
from tfloop.tfutils.sessinit import JustCurrentSession, SessionInit
from tfloop.train.callback_list import RunCallbacks, checked_callbacks, checked_monitors
from tfloop.train.defaults import (
    check_no_default_twice,
    default_callbacks_besides,
    default_monitors,
    steps_per_epoch_of,
)
from tfloop.train.error_policy import TrainingErrorPolicy
from tfloop.train.final_weights import FinalWeights
from tfloop.train.logdir import RunLogDir
from tfloop.train.loop import TrainLoop
from tfloop.train.options import TrainerOptions
from tfloop.train.passes import (
    PassEndWatch,
    any_pass_ended,
    check_epochs_are_passes,
    configure_watched_loop,
    log_epochs_are_passes,
)
from tfloop.train.run_state import RunResume, SavedCheckpoints
from tfloop.train.run_status import RunStatusRecorder
from tfloop.utils import logger
from tfloop.utils.part_attribute import PartAttribute

__all__ = ["Trainer", "StopTraining"]

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


class Trainer(metaclass=_ConstructedInItsGraph):
    """Base class of trainers: a graph, a list of callbacks, and the main loop.

    The lifecycle of :meth:`train`: :meth:`setup_callbacks` (every callback's ``setup_graph``),
    :meth:`initialize` (session created, variables initialized or restored, graph finalized),
    :meth:`main_loop`. Subclasses build the training op in ``setup_graph``.

    The trainer is made of parts it owns, each a concern of its own; their attributes that
    callbacks and users read are the trainer's too (``trainer.epoch_num`` is
    ``trainer.loop.epoch_num``; see :class:`~tfloop.utils.part_attribute.PartAttribute`).

    Attributes:
        graph (tf.Graph): tfloop's own graph; the user's eager code is unaffected by it.
        sess: the raw session; ``hooked_sess``: the session whose ``run`` carries the callbacks'
            fetches; ``monitors``: the :class:`Monitors` dispatcher.
        loop (TrainLoop): the position, the bounds and the stop (``epoch_num``,
            ``global_step``, ``request_stop``, ``training_error``, ``stop_reason``...).
        checkpoints (SavedCheckpoints): the checkpoints saved, announced to
            ``checkpoint_listeners`` once their trigger round is over.
        resume (RunResume): the run of a checkpoint this one continues.
        log_directory (RunLogDir): the run's ``logdir`` and ``run_logdir``.
        final (FinalWeights): the model's weights when :meth:`train` returned
            (``final_weights``), which ``get_predictor`` predicts with after training.
        run_options (TrainerOptions): the run's ``options`` (a ``RunOptions``: seed, precision,
            XLA, steps per session call), set with ``set_options`` before ``setup_graph`` and
            applied by the trainer as it builds.
        is_chief (bool): whether this process is the chief worker.
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

    supports_steps_per_run: bool = False

    # ---- the parts' attributes, the trainer's too -------------------------------------------
    epoch_num = PartAttribute("loop", TrainLoop)
    global_step = PartAttribute("loop", TrainLoop)
    local_step = PartAttribute("loop", TrainLoop)
    starting_epoch = PartAttribute("loop", TrainLoop)
    max_epoch = PartAttribute("loop", TrainLoop)
    steps_per_run = PartAttribute("loop", TrainLoop)
    steps_per_epoch = PartAttribute("loop", TrainLoop, "known_steps_per_epoch")
    expected_steps_per_epoch = PartAttribute("loop", TrainLoop, "steps_per_epoch")
    epochs_are_passes = PartAttribute("loop", TrainLoop)
    is_last_step = PartAttribute("loop", TrainLoop)
    stop_requested = PartAttribute("loop", TrainLoop)
    request_stop = PartAttribute("loop", TrainLoop)
    training_error = PartAttribute("loop", TrainLoop)
    stop_reason = PartAttribute("loop", TrainLoop)
    loop_state = PartAttribute("loop", TrainLoop, "state_dict")
    checkpoint_listeners = PartAttribute("checkpoints", SavedCheckpoints, "listeners")
    checkpoint_saved = PartAttribute("checkpoints", SavedCheckpoints, "saved")
    announce_checkpoints = PartAttribute("checkpoints", SavedCheckpoints, "announce")
    when_checkpoint_written = PartAttribute("checkpoints", SavedCheckpoints, "when_written")
    wait_for_checkpoint = PartAttribute("checkpoints", SavedCheckpoints, "wait_for")
    continue_run_of = PartAttribute("resume", RunResume)
    callbacks = PartAttribute("callback_list", RunCallbacks, "all")
    callbacks_of = PartAttribute("callback_list", RunCallbacks, "of")
    step_callbacks = PartAttribute("callback_list", RunCallbacks)
    run_callbacks = PartAttribute("callback_list", RunCallbacks)
    options = PartAttribute("run_options", TrainerOptions)
    set_options = PartAttribute("run_options", TrainerOptions)
    prepare_graph = PartAttribute("run_options", TrainerOptions)
    logdir = PartAttribute("log_directory", RunLogDir, writable=True)
    run_logdir = PartAttribute("log_directory", RunLogDir)
    final_weights = PartAttribute("final", FinalWeights, "weights")
    training_ended = PartAttribute("final", FinalWeights, "ended")
    keep_final_weights = PartAttribute("final", FinalWeights, "keep", writable=True)

    def __init__(self) -> None:
        self.loop = TrainLoop()
        self.checkpoints = SavedCheckpoints()
        self.resume = RunResume(self.loop)
        self.log_directory = RunLogDir()
        self.final = FinalWeights(self.graph, self.loop)
        self.run_options = TrainerOptions(self.graph, self.loop, type(self).__name__,
                                          self.supports_steps_per_run)
        self.train_op: Any = None
        self.sess: Any = None
        self.hooked_sess: Any = None  # a HookedSession, from initialize() on
        self.monitors: Monitors | None = None
        self._input_source: InputSource | None = None
        self._model: Any = None
        self._optimizer: Any = None
        self.callback_list = RunCallbacks()
        self.epoch_end_listeners: list[Callable[[], None]] = []
        self.loop_end_listeners: list[Callable[[], None]] = []

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
        return self.callback_list.register(cb, self.is_chief)

    def setup_callbacks(self, callbacks: Callback | Iterable[Callback] | None,
                        monitors: MonitorBase | Iterable[MonitorBase] | None) -> None:
        """Order the callbacks and run every ``setup_graph``: the last chance to change the graph.

        Order: step counter, the watch on the ends of passes (when the epochs are passes),
        input/trainer callbacks, ``callbacks``, monitor backends, and the :class:`Monitors`
        dispatcher last.
        """
        callbacks = checked_callbacks(callbacks)
        monitors = checked_monitors(monitors)
        self.log_directory.take()
        with self.graph.as_default():
            describe_trainable_vars()
            registered = self.callback_list.take_registered()
            self.register_callback(MaintainStepCounter(self.loop))
            if self.loop.passes:
                self.register_callback(PassEndWatch(self.loop, self._input_source,
                                                    self.pass_end_tensors))
            for cb in registered + callbacks:
                self.register_callback(cb)
            for m in monitors:
                self.register_callback(m)
            self.monitors = Monitors([m for m in monitors if m in self.callback_list.all])
            self.register_callback(self.monitors)
            self.callback_list.set_up(self)

    def initialize(self, session_creator: Any = None,
                   session_init: SessionInit | None = None) -> None:
        """Create the session, initialize or restore variables, and finalize the graph."""
        session_creator = self.options.session_creator(session_creator,
                                                        self.default_session_config())
        session_init = session_init or JustCurrentSession()
        if not isinstance(session_init, SessionInit):
            raise TypeError("session_init must be a SessionInit (e.g. SaverRestore), got "
                            f"{session_init!r}.")
        with self.graph.as_default():
            session_init.setup_graph()
        session_init.check_holds_the_model()
        with self.options.precision.rewriter_environment():
            self.sess = session_creator.create_session(self.graph)
            session_init.init(self.sess)
            self.resume.restore(self.sess, self._input_source, self.callbacks)
        self.graph.finalize()
        self.hooked_sess = HookedSession(self.sess, self.callback_list.group.run_hooks())

    def pass_end_tensors(self, flags: list[Any]) -> tuple[Any, Any]:
        """From the pass-end flags of a step's batches (``InputSource.pass_end_flags``): a bool
        scalar, true when the epoch ends after the step, and one that is true when this
        worker's own pass ended, or None where the two are the same (one machine; a cluster
        trainer combines the workers' flags)."""
        return any_pass_ended(flags), None

    # ---- running ---------------------------------------------------------------------------------
    def run_step(self) -> None:
        """Run one training step: one ``session.run`` of the training op with every callback's
        fetches."""
        self.hooked_sess.run(self.train_op)

    def main_loop(self, steps_per_epoch: int | None, starting_epoch: int,
                  max_epoch: int) -> None:
        """Run the epochs, calling the callbacks as ``docs/callbacks.md`` lists; how training ends
        (a stop, Ctrl-C, an error; ``after_train`` always) is :class:`TrainingErrorPolicy`'s."""
        loop, callbacks = self.loop, self.callback_list.group
        configure_watched_loop(loop, callbacks, steps_per_epoch, starting_epoch, max_epoch)
        ending = TrainingErrorPolicy(loop, callbacks, self._input_source, self.loop_end_listeners,
                                     self.announce_checkpoints)
        with self.options.precision.rewriter_environment(), self.graph.as_default(), \
                self.sess.as_default(), self.final.kept_from(self.sess), ending:
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
        loop, callbacks, hooked_sess = self.loop, self.callback_list.group, self.hooked_sess
        try:
            for _ in loop.runs_of_epoch():
                if self.checkpoints.unannounced:
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
            check_epochs_are_passes(self._input_source)
            log_epochs_are_passes(self._input_source)
        self.log_directory.take()
        if resume_from is not None:
            session_init = session_init or ResumeInit(resume_from)
            if not self.continue_run_of(resume_from):
                self.final.training_returned(f"the run of {resume_from} had already finished")
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
                self.final.training_returned()

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
