"""RunOptions: the options of a whole run, kept by its trainer and applied at the trainer's own
build points, whichever way the run is assembled."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tfloop.tfutils.precision import Precision
from tfloop.tfutils.seed import seed_training
from tfloop.tfutils.sesscreate import NewSessionCreator, default_session_config
from tfloop.train.steps_per_run import check_steps_per_run
from tfloop.utils.checks import check_bool
from tfloop.utils.seed import check_seed

__all__ = ["RunOptions", "TrainerOptions"]


@dataclass(frozen=True)
class RunOptions:
    """What a whole training run is made with, beside its model and data.

    A trainer keeps one (:attr:`Trainer.options`, set with :meth:`Trainer.set_options` before
    ``setup_graph``) and applies it itself: the seed, op determinism and float16's moving
    averages when it prepares its graph, the loss-scaling optimizer wrapper when it builds the
    training op, the precision and XLA rewrites in every session config it makes. So
    ``launch_train_with_config(TrainConfig(...))``, ``trainer.setup_graph`` +
    ``train_with_defaults`` and ``KerasModel(...).fit`` give the same graph for the same options.

    Args:
        seed (int): the seed of the training graph (its random ops and tf.data shuffles), of
            Python's, NumPy's and DataFlow RNGs. None: the seed of ``tf.random.set_seed`` if one
            was called, else none. See docs/reproducibility.md.
        deterministic (bool): turn on TensorFlow's op determinism (for the whole process).
        mixed_precision (str): one of :data:`~tfloop.tfutils.precision.MIXED_PRECISION_MODES`
            (what each does: :class:`~tfloop.tfutils.precision.Precision`); variables,
            checkpoints and exports stay float32.
        xla (bool): compile the training step with XLA auto-clustering.
        steps_per_run (int): training steps per session call (an in-graph loop; trainers that
            support it, e.g. ``SimpleTrainer``). None: the trainer's own setting.

    Example:
        >>> trainer = SimpleTrainer()
        >>> trainer.set_options(RunOptions(seed=0, mixed_precision="float16"))
        >>> trainer.setup_graph(model.get_input_signature(), DatasetInput(make_dataset),
        ...                     model.build_graph, model.get_optimizer)
    """

    seed: int | None = None
    deterministic: bool = False
    mixed_precision: str | None = None
    xla: bool = False
    steps_per_run: int | None = None

    def __post_init__(self) -> None:
        # Normalized in place (a NumPy integer becomes an int): the dataclass is frozen.
        object.__setattr__(self, "seed", check_seed(self.seed, "RunOptions"))
        check_bool(self.deterministic, "RunOptions: deterministic")
        Precision(self.mixed_precision, self.xla)
        if self.steps_per_run is not None:
            object.__setattr__(self, "steps_per_run", check_steps_per_run(self.steps_per_run))

    @property
    def precision(self) -> Precision:
        """The :class:`~tfloop.tfutils.precision.Precision` of ``mixed_precision`` and ``xla``."""
        return Precision(self.mixed_precision, self.xla)

    def prepare_graph(self, graph: Any) -> int | None:
        """Set up ``graph`` before the model is built in it: the seed and op determinism, the
        hardware checks of the precision, and, in float16, moving averages that skip the steps
        loss scaling skips. Returns the seed in use (these options' or the user's
        ``tf.random.set_seed``), or None."""
        seed = seed_training(graph, self.seed, self.deterministic)
        precision = self.precision
        if precision.active:
            precision.check_hardware()
        precision.prepare_graph(graph)
        return seed

    def session_creator(self, creator: Any, base_config: Any) -> Any:
        """``creator`` with the precision and XLA rewrites in its config; None gives a
        :class:`NewSessionCreator` of ``base_config``. A given creator is copied, never changed.
        """
        precision = self.precision
        if creator is None:
            return NewSessionCreator(config=precision.apply(base_config))
        if not precision.check_session_creator(creator).active:
            return creator
        creator = copy.copy(creator)
        creator.config = precision.apply(creator.config or default_session_config())
        return creator


class TrainerOptions:
    """The trainer's part that holds the run's :class:`RunOptions`: set before the graph is
    prepared (:meth:`set_options`), applied at the trainer's build points: :meth:`prepare_graph`
    before the model is built, the optimizer wrapper in ``setup_graph``, the session config in
    ``initialize`` (:meth:`RunOptions.session_creator`). The trainer's ``options``,
    ``set_options`` and ``prepare_graph`` are this part's.

    Args:
        graph (tf.Graph): the trainer's graph.
        loop (TrainLoop): the trainer's loop, given ``steps_per_run``.
        trainer_name (str): the trainer's class name, for errors.
        supports_steps_per_run (bool): whether the trainer can loop in the graph.

    Example:
        >>> trainer.set_options(RunOptions(seed=0, xla=True))
        >>> trainer.options.seed
        0
    """

    def __init__(self, graph: Any, loop: Any, trainer_name: str,
                 supports_steps_per_run: bool) -> None:
        self._graph = graph
        self._loop = loop
        self._trainer_name = trainer_name
        self._supports_steps_per_run = supports_steps_per_run
        self._options = RunOptions()
        self._graph_prepared = False

    @property
    def options(self) -> RunOptions:
        """The run's :class:`RunOptions` (see :meth:`set_options`)."""
        return self._options

    def set_options(self, options: RunOptions) -> None:
        """Make ``options`` the run's options. Call it before ``setup_graph``, which applies them;
        ``options.steps_per_run=None`` keeps the trainer's own steps per session call.

        Example:
            >>> trainer.set_options(RunOptions(seed=0, mixed_precision="float16"))
        """
        if not isinstance(options, RunOptions):
            raise TypeError(f"set_options needs a RunOptions (e.g. RunOptions(seed=0)), got "
                            f"{options!r}.")
        if self._graph_prepared:
            raise RuntimeError("set_options must be called before setup_graph: the options are "
                               "applied while the graph is built.")
        steps = options.steps_per_run
        if steps is not None and steps != 1 and not self._supports_steps_per_run:
            raise TypeError(f"{self._trainer_name} does not support steps_per_run > 1 (got "
                            f"{steps}); use SimpleTrainer.")
        if steps is not None:
            self._loop.steps_per_run = steps
        self._options = options

    def prepare_graph(self) -> int | None:
        """Apply the options to the graph before the model is built in it (``setup_graph`` calls
        it first; a trainer that builds its graph another way calls it itself; see
        :meth:`RunOptions.prepare_graph`). Returns the seed in use, or None."""
        self._graph_prepared = True
        return self._options.prepare_graph(self._graph)
