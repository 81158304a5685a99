"""AutoResumeTrainConfig: continue a run exactly from the latest checkpoint of its log directory."""
import os
import sys

from tfloop.callbacks.state import (RESUME_SUFFIX, ResumeStateSaver, apply_callback_states,
                                    read_resume_state, resume_state_path)
from tfloop.compat import tf
from tfloop.tfutils.sessinit import SaverRestore, SessionInit
from tfloop.tfutils.varmanip import checkpoint_step, find_latest_checkpoint
from tfloop.train.config import TrainConfig
from tfloop.utils import logger

__all__ = ["AutoResumeTrainConfig", "find_resume_checkpoint", "ResumeInit"]


def find_resume_checkpoint(directory):
    """The checkpoint ``model-<step>`` a resumed run starts from, or None.

    It is the newest complete one; when the directory holds resume states (``*.resume.json``), the
    newest complete one that has its resume state too (a process killed between writing a
    checkpoint and its state leaves the checkpoint without one).
    """
    if not os.path.isdir(directory):
        return None
    with_state = any(name.endswith(RESUME_SUFFIX) and not name.startswith(".")
                     for name in os.listdir(directory))

    def accept(prefix):
        if checkpoint_step(prefix) is None:
            return False
        return not with_state or os.path.isfile(resume_state_path(prefix))
    return find_latest_checkpoint(directory, accept=accept)


def _global_step_of(prefix):
    reader = tf.train.load_checkpoint(prefix)
    if reader.has_tensor("global_step"):
        return int(reader.get_tensor("global_step"))
    return checkpoint_step(prefix)


class ResumeInit(SessionInit):
    """Restore a checkpoint with everything a resumed run needs: the variables (as
    :class:`SaverRestore`), the input iterator's position, the callbacks' states, and the step in
    the epoch to continue from. Made by :class:`AutoResumeTrainConfig`.

    Example:
        >>> init = ResumeInit("train_log/run/model-12", state, data, state_saver, (5, 0))
    """

    def __init__(self, prefix, state, source, state_saver, position):
        self.prefix = prefix
        self.state = state
        self.source = source
        self.state_saver = state_saver
        self.position = position
        self._restore = SaverRestore(prefix)
        self._iterator = None

    def _setup_graph(self):
        self._restore.setup_graph()
        blob = (self.state or {}).get("iterator_bytes")
        if blob is None:
            return
        iterator_state = self.state_saver.iterator_state
        if iterator_state is None:
            logger.warning(f"{resume_state_path(self.prefix)} has an input position, but this run's input cannot be saved or "
                           f"restored ({self.state_saver.input_note}); the input restarts from its beginning.")
            return
        iterator_state.build_restore()
        self._iterator = (iterator_state, blob)

    def _run_init(self, sess):
        self._restore.init(sess)
        if self._iterator is not None:
            iterator_state, blob = self._iterator
            try:
                iterator_state.restore(sess, blob)
            except tf.errors.OpError as e:
                raise ValueError(
                    "The input position saved in {} does not fit this run's input pipeline ({}). "
                    "Resume with the same dataset definition, or delete {} to restart the input "
                    "from its beginning.".format(self.prefix + ".iterator",
                                                 e.message.splitlines()[0],
                                                 resume_state_path(self.prefix))) from None
            self.source.iterator_restored = True
            logger.info(f"Restored the input position of {self.prefix}.")
        trainer = self.state_saver.trainer
        if self.state is not None and trainer is not None:
            apply_callback_states(trainer.callbacks, self.state.get("callbacks", {}),
                                  resume_state_path(self.prefix))
        if trainer is not None:
            trainer.loop.starting_local_step = self.position[1]


class AutoResumeTrainConfig(TrainConfig):
    """A :class:`TrainConfig` that continues from the latest checkpoint of the log directory.

    When the log directory (set with ``logger.set_logger_dir(..., action="keep")``) holds a
    complete checkpoint, the run restores it (variables, input position, callbacks' states) and
    continues at the epoch and step where it was written; ``session_init`` and ``starting_epoch``
    given here are then replaced. Otherwise it is a plain ``TrainConfig``. Either way it adds a
    :class:`ResumeStateSaver`, which writes the resume state next to every checkpoint a
    ``ModelSaver`` writes: use this config from the first run on to make resuming exact.

    Args:
        always_resume (bool): resume without asking. With False, an interactive terminal asks
            whether to resume; a non-interactive process resumes.
        **kwargs: the arguments of :class:`TrainConfig`.

    Attributes:
        resume_from (str): the checkpoint the run resumes from, or None.
        starting_local_step (int): the step in ``starting_epoch`` to continue from.

    Example:
        >>> logger.set_logger_dir("train_log/run1", action="keep")
        >>> config = AutoResumeTrainConfig(model=MyModel(), data=DatasetInput(make_dataset),
        ...                                callbacks=[ModelSaver()], max_epoch=100)
        >>> launch_train_with_config(config, SimpleTrainer())    # run it again after a kill
    """

    def __init__(self, always_resume=True, **kwargs):
        super().__init__(**kwargs)
        self.state_saver = ResumeStateSaver(self.data)
        self.callbacks = self.callbacks + [self.state_saver]
        self.resume_from = None
        self.starting_local_step = 0
        logdir = logger.get_logger_dir()
        if logdir is None:
            logger.info("AutoResumeTrainConfig: no log directory is set, so there is nothing to "
                        "resume from.")
            return
        prefix = find_resume_checkpoint(logdir)
        if prefix is None:
            return
        if not always_resume and not self._ask(prefix):
            logger.info(f"Not resuming from {prefix}, as asked.")
            return
        self._resume(prefix, kwargs)

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

    def _resume(self, prefix, kwargs):
        state = read_resume_state(prefix)
        epoch, local_step = self._position(prefix, state)
        if epoch > self.max_epoch:
            raise ValueError(
                f"Nothing to resume: {prefix} is from the end of training (epoch {epoch - 1} of max_epoch={self.max_epoch}). "
                "Raise max_epoch to train longer, or use a new log directory.")
        for name in ("session_init", "starting_epoch"):
            if kwargs.get(name) is not None:
                logger.info(f"AutoResumeTrainConfig: {name}={kwargs[name]!r} is replaced by the checkpoint {prefix}."
                            )
        self.session_init = ResumeInit(prefix, state, self.data, self.state_saver,
                                       (epoch, local_step))
        self.starting_epoch = epoch
        self.starting_local_step = local_step
        self.resume_from = prefix
        logger.info("Resuming from {}: epoch {}, step {} of the epoch, global step {}.".format(
            prefix, epoch, local_step, (state or {}).get("global_step", _global_step_of(prefix))))

    def _position(self, prefix, state):
        spe = self.steps_per_epoch
        if state is not None and (spe is None or state["steps_per_epoch"] == spe):
            return int(state["epoch"]), int(state["local_step"])
        global_step = _global_step_of(prefix)
        if spe is None:
            raise ValueError(f"AutoResumeTrainConfig needs steps_per_epoch to resume from {prefix} (it "
                             "has no resume state, and the data's size is unknown).")
        epoch, local_step = global_step // spe + 1, global_step % spe
        if state is not None:
            logger.warning("{} was written with steps_per_epoch={}, this run has {}: continuing at "
                           "global step {} (epoch {}, step {}); the input restarts from its "
                           "beginning.".format(resume_state_path(prefix), state["steps_per_epoch"],
                                               spe, global_step, epoch, local_step))
            state.pop("iterator_bytes", None)
        elif local_step:
            logger.warning(f"{prefix} has no resume state: continuing at global step {global_step} (epoch {epoch}, step "
                           f"{local_step}), but the input restarts from its beginning and the callbacks "
                           "start afresh.")
        return epoch, local_step
