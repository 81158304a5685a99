"""TrainConfig: everything one training run needs, checked before anything is built."""
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

from tfloop.callbacks.base import Callback
from tfloop.callbacks.keras_callback import wrap_keras_callbacks
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource
from tfloop.input.dataset import DatasetInput
from tfloop.input.queue import QueueInput
from tfloop.model_desc import ModelDesc, ModelDescBase
from tfloop.monitors.base import MonitorBase
from tfloop.resume.restore import read_run_state
from tfloop.resume.saver import ResumeStateSaver
from tfloop.resume.session_init import ResumeInit, find_resume_checkpoint
from tfloop.tfutils.sessinit import SessionInit
from tfloop.train.defaults import DEFAULT_CALLBACKS, DEFAULT_MONITORS
from tfloop.train.logdir import check_logdir
from tfloop.train.loop import TrainLoop
from tfloop.train.options import RunOptions
from tfloop.utils import files, logger
from tfloop.utils.checks import check_bool, check_list_of
from tfloop.utils.seed import check_seed

__all__ = ["TrainConfig", "AutoResumeTrainConfig", "as_input_source", "DEFAULT_CALLBACKS",
           "DEFAULT_MONITORS"]


def as_input_source(data: InputSource | Callable[[], Any] | Iterable[Any]) -> InputSource:
    """Turn ``data`` into an InputSource: an InputSource as is; a ``tf.data.Dataset`` or a function
    that builds one -> :class:`DatasetInput`; any other iterable (a list, a DataFlow, an object with
    ``__iter__``) -> :class:`QueueInput`, which prefetches it in a background thread."""
    if isinstance(data, InputSource):
        return data
    if isinstance(data, (str, bytes, os.PathLike)):
        raise TypeError(
            f"data={data!r} is a path, not data: tfloop does not open files by name. For TFRecord "
            "files give a function building the dataset, e.g. data=lambda: "
            f"tf.data.TFRecordDataset({os.fspath(data)!r}).map(parse_example).batch(32), where "
            "parse_example decodes one record into the model's inputs.")
    if isinstance(data, tf.data.Dataset) or callable(data):
        return DatasetInput(data)
    try:
        iter(data)
    except TypeError:
        raise TypeError("data must be an InputSource, a tf.data.Dataset, a function building one, "
                        f"or an iterable of datapoints; got {data!r}.") from None
    return QueueInput(data)


def _check_session_args(session_creator, session_config, session_init):
    """Check TrainConfig's arguments about the session: how it is created (a creator or a
    config, not both) and what initializes its variables."""
    if session_creator is not None and session_config is not None:
        raise ValueError("Give either session_creator= or session_config=, not both.")
    if session_config is not None and not isinstance(session_config, tfv1.ConfigProto):
        raise TypeError("session_config must be a tf.compat.v1.ConfigProto, got "
                        f"{session_config!r}; e.g. tf.compat.v1.ConfigProto("
                        "gpu_options=tf.compat.v1.GPUOptions(allow_growth=True)).")
    if session_creator is not None and not callable(getattr(session_creator, "create_session",
                                                            None)):
        raise TypeError("session_creator must have a create_session(graph) method (e.g. "
                        f"NewSessionCreator(config=...)), got {session_creator!r}.")
    if session_init is not None and not isinstance(session_init, SessionInit):
        raise TypeError("session_init must be a SessionInit (e.g. SaverRestore(path)), got "
                        f"{session_init!r}.")


class TrainConfig:
    """The configuration of one training run.

    Args:
        model (ModelDesc): the model.
        data (InputSource, tf.data.Dataset, callable or iterable): the training data; see
            :func:`as_input_source`. ``dataflow=`` is accepted as an alias.
        callbacks (list[Callback]): the user's callbacks; Keras callbacks among them are
            wrapped in ``KerasCallback``.
        extra_callbacks (list[Callback]): replaces the default callbacks.
        monitors (list[MonitorBase]): replaces the default monitors.
        session_creator: creates the session (``NewSessionCreator`` by default).
        session_config (tf.compat.v1.ConfigProto): config for the default session creator.
        session_init (SessionInit): what to load into the variables (e.g. ``SaverRestore``).
        steps_per_epoch (int): defaults to the data's size when known; without it, data of
            unknown length (TFRecord files, a ``filter``, a DataFlow without ``len``) makes each
            epoch one pass over it (see ``docs/data.md``, "Epochs").
        starting_epoch (int): the first epoch's number (1 by default).
        max_epoch (int): the last epoch's number (inclusive). These three are converted as
            tensorpack's ``int()`` did: ``2.0`` and ``'2'`` are 2, and ``2.5`` is 2 with a
            warning (``steps_per_epoch = num_examples / batch_size`` is a float in Python 3).
        steps_per_run (int): training steps per session call (an in-graph loop); overrides the
            trainer's own setting; see :mod:`tfloop.train.steps_per_run`.
        seed (int): makes two runs on one machine's CPU bit-identical: the seed of the training
            graph (its random ops and tf.data shuffles), of Python's and NumPy's RNGs and of
            DataFlow RNGs. None: the seed of ``tf.random.set_seed`` if one was called, else
            none. See docs/reproducibility.md.
        deterministic (bool): turn on TensorFlow's op determinism
            (``tf.config.experimental.enable_op_determinism()``, for the whole process).
        mixed_precision (str): reduced-precision arithmetic in the training step, one of
            :data:`~tfloop.tfutils.precision.MIXED_PRECISION_MODES` (what each does:
            :class:`~tfloop.tfutils.precision.Precision`); variables, checkpoints and exports
            stay float32. See ``docs/performance.md``.
        xla (bool): compile the training step with XLA auto-clustering.
        logdir (str): the run's log directory (``trainer.logdir``): a local path or a URL such
            as ``gs://bucket/run``. None: the directory of ``logger.set_logger_dir``.

    Attributes:
        options (RunOptions): ``seed``, ``deterministic``, ``mixed_precision``, ``xla`` and
            ``steps_per_run``, which ``launch_train_with_config`` hands to the trainer.
        resume_from (str): the checkpoint whose run this one continues (None here; see
            :class:`AutoResumeTrainConfig`).

    Example:
        >>> config = TrainConfig(model=MyModel(), data=DatasetInput(make_dataset),
        ...                      callbacks=[ModelSaver()], max_epoch=10)
        >>> launch_train_with_config(config, SimpleTrainer())
    """

    def __init__(self, dataflow: Iterable[Any] | None = None,
                 data: InputSource | Callable[[], Any] | Iterable[Any] | None = None,
                 model: ModelDesc | None = None,
                 callbacks: Callback | Iterable[Callback] | None = None,
                 extra_callbacks: Callback | Iterable[Callback] | None = None,
                 monitors: Iterable[MonitorBase] | None = None, session_creator: Any = None,
                 session_config: Any = None, session_init: SessionInit | None = None,
                 starting_epoch: int = 1, steps_per_epoch: int | None = None,
                 max_epoch: int = 99999, *, steps_per_run: int | None = None,
                 seed: int | None = None, deterministic: bool = False,
                 mixed_precision: str | None = None, xla: bool = False,
                 logdir: str | os.PathLike[str] | None = None) -> None:
        if data is not None and dataflow is not None:
            raise ValueError("Give either data= or dataflow=, not both.")
        if dataflow is not None:
            data = dataflow
        if model is not None and not isinstance(model, ModelDescBase):
            raise TypeError(f"model must be a ModelDesc, got {model!r} ({type(model).__name__}).")
        self.model = model
        self.data = as_input_source(data) if data is not None else None
        self.callbacks = check_list_of(wrap_keras_callbacks(callbacks), "callbacks",
                                       Callback) or []
        self.extra_callbacks = check_list_of(wrap_keras_callbacks(extra_callbacks),
                                             "extra_callbacks", Callback)
        self.monitors = check_list_of(monitors, "monitors", MonitorBase, one=Callback)
        _check_session_args(session_creator, session_config, session_init)
        self.session_creator = session_creator
        self.session_config = session_config
        self.options = RunOptions(
            seed=check_seed(seed, "TrainConfig"),
            deterministic=check_bool(deterministic, "TrainConfig: deterministic"),
            mixed_precision=mixed_precision, xla=xla, steps_per_run=steps_per_run)
        self.options.precision.check_session_creator(session_creator)
        self.session_init = session_init
        if steps_per_epoch is None:
            steps_per_epoch = self.data.size() if self.data is not None else None
            if steps_per_epoch == 0:
                raise ValueError(f"The data {self.data} is empty: it has no datapoints to train "
                                 "on. Check what builds it (a filter that drops everything, an "
                                 "empty file list).")
        loop = TrainLoop()
        loop.configure(1 if steps_per_epoch is None else steps_per_epoch, starting_epoch,
                       max_epoch)
        self.steps_per_epoch = None if steps_per_epoch is None else loop.steps_per_epoch
        self.starting_epoch = loop.starting_epoch
        self.max_epoch = loop.max_epoch
        self.resume_from: str | None = None
        self.logdir = check_logdir(logdir, "TrainConfig: logdir")

    # The options, as tensorpack scripts read them from the config.
    seed = property(lambda self: self.options.seed)
    deterministic = property(lambda self: self.options.deterministic)
    mixed_precision = property(lambda self: self.options.mixed_precision)
    xla = property(lambda self: self.options.xla)
    steps_per_run = property(lambda self: self.options.steps_per_run)
    precision = property(lambda self: self.options.precision)


def _existing_dir(path):
    """``path`` (AutoResumeTrainConfig's ``resume_dir``) as a str, checked to be a directory."""
    if not isinstance(path, (str, os.PathLike)) or not files.isdir(os.fspath(path)):
        raise ValueError(f"AutoResumeTrainConfig: resume_dir={path!r} is not a directory; give "
                         "the directory that holds the checkpoint to resume from, or None.")
    return os.fspath(path)


class AutoResumeTrainConfig(TrainConfig):
    """A :class:`TrainConfig` that continues from the latest checkpoint of the run's log directory.

    The run's log directory is the trainer's (``TrainConfig(logdir=...)``, ``trainer.logdir =
    ...``, else ``logger.set_logger_dir(..., action="keep")``). When it holds a complete
    checkpoint, the config names it (:attr:`resume_from`, asking first if
    ``always_resume=False``) and restores its variables (``session_init``, replaced); the trainer
    continues its run: it reads the checkpoint's run state, continues at the epoch and step where
    it was written, and gives the input and the callbacks their states right after the session
    is initialized. When that checkpoint ends the last epoch of ``max_epoch``, the run is already
    finished: launching it again logs one line and trains nothing, so a script can be rerun any
    number of times, and rerunning it with a larger ``max_epoch`` trains the new epochs only.
    Otherwise it is a plain ``TrainConfig``. Either way it adds a :class:`ResumeStateSaver`,
    which writes the resume state next to every checkpoint the trainer announces: use this
    config from the first run on to make resuming exact.

    The config looks when it is made, in the directory it knows then (``logdir=``, else the
    logger's), so that :attr:`resume_from` and the attributes below can be read before
    launching; ``launch_train_with_config`` looks again when the trainer's directory is another
    (``trainer.logdir``).

    Args:
        always_resume (bool): resume without asking. With False, an interactive terminal asks
            whether to resume; a non-interactive process resumes.
        resume_dir (str): look for the checkpoint there instead of in the log directory, e.g.
            Ray's checkpoint of the run (``ray_checkpoint_dir()``); None: the log directory.
        **kwargs: the arguments of :class:`TrainConfig`.

    Attributes:
        resume_from (str): the checkpoint the run resumes from, or None.
        starting_epoch, starting_local_step (int): where the run continues (read-only when it
            resumes: the checkpoint's position as the trainer will find it, read on first use).
        finished_epoch (int): when the checkpoint is from the end of training (its epoch is
            ``max_epoch`` or later), that epoch; the launched run then trains nothing. None
            otherwise.

    Example:
        >>> logger.set_logger_dir("train_log/run1", action="keep")
        >>> config = AutoResumeTrainConfig(model=MyModel(), data=DatasetInput(make_dataset),
        ...                                callbacks=[ModelSaver()], max_epoch=100)
        >>> launch_train_with_config(config, SimpleTrainer())    # run it again after a kill
    """

    def __init__(self, always_resume: bool = True, resume_dir: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.state_saver = ResumeStateSaver(self.data)
        self.callbacks = self.callbacks + [self.state_saver]
        self._resumed: TrainLoop | None = None
        self._always_resume = always_resume
        self._resume_dir = None if resume_dir is None else _existing_dir(resume_dir)
        self._given = {name: kwargs.get(name) for name in ("session_init", "starting_epoch")}
        self._looked_in: str | None = None
        known = self._resume_dir or self.logdir or logger.get_logger_dir()
        if known is not None:
            self._resume_from_checkpoint_in(known)

    def resume_in(self, run_logdir: str | None) -> None:
        """Name the checkpoint to resume from in ``run_logdir``, the log directory of the run
        being launched (``resume_dir`` instead when given); ``launch_train_with_config`` calls
        it with the trainer's. Nothing changes when the config looked there already."""
        directory = self._resume_dir or run_logdir
        if directory is None:
            logger.warning("AutoResumeTrainConfig: the run has no log directory, so it saves "
                           "nothing to resume from and cannot be resumed: give "
                           "TrainConfig(logdir=...) or trainer.logdir, or call "
                           "logger.set_logger_dir(dir, action='keep').")
        elif directory != self._looked_in:
            self._resume_from_checkpoint_in(directory)

    def _resume_from_checkpoint_in(self, directory: str) -> None:
        self._looked_in = directory
        self.resume_from, self._resumed = None, None
        self.session_init = self._given["session_init"]
        prefix = find_resume_checkpoint(directory)
        if prefix is None:
            return
        if not self._always_resume and not self._ask(prefix):
            logger.info(f"Not resuming from {prefix}, as asked.")
            return
        for name, value in self._given.items():
            if value is not None:
                logger.info(f"AutoResumeTrainConfig: {name}={value!r} is replaced by the "
                            f"checkpoint {prefix}.")
        self.resume_from = prefix
        self.session_init = ResumeInit(prefix)

    @staticmethod
    def _ask(prefix):
        try:
            interactive = sys.stdin is not None and sys.stdin.isatty()
        except (AttributeError, ValueError):
            interactive = False
        if not interactive:
            return True
        answer = input(f"Found checkpoint {prefix}. Resume from it? [Y/n] ")
        return answer.strip().lower() not in ("n", "no")

    def _resumed_loop(self) -> TrainLoop:
        """A loop with this config's bounds at the checkpoint's position, as the trainer's will
        be (:meth:`TrainLoop.load_state_dict`); made on first use."""
        if self._resumed is None:
            state, source = read_run_state(self.resume_from)
            steps_per_epoch = self.steps_per_epoch or state.get("steps_per_epoch")
            if steps_per_epoch is None and "epoch" not in state:
                raise ValueError(f"AutoResumeTrainConfig needs steps_per_epoch to say where the "
                                 f"run of {self.resume_from} continues (it has no resume state, "
                                 "and the data's size is unknown).")
            # None: the run's epochs were passes over data of unknown length.
            loop = TrainLoop()
            loop.configure(steps_per_epoch, 1, self.max_epoch)
            loop.load_state_dict(state, source)
            self._resumed = loop
        return self._resumed

    @property
    def starting_epoch(self) -> int:
        if self.resume_from is None:
            return self._starting_epoch
        return self._resumed_loop().starting_epoch

    @starting_epoch.setter
    def starting_epoch(self, value: int) -> None:
        self._starting_epoch = value

    @property
    def starting_local_step(self) -> int:
        return 0 if self.resume_from is None else self._resumed_loop().starting_local_step

    @property
    def finished_epoch(self) -> int | None:
        return None if self.resume_from is None else self._resumed_loop().finished_epoch
