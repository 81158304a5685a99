"""OptunaPruningCallback: report a stat to an Optuna trial each epoch, stop when it is pruned."""
import difflib

from tfloop.callbacks.base import Callback, StopTraining
from tfloop.utils import logger
from tfloop.utils.extras import import_extra

__all__ = ["OptunaPruningCallback"]


class OptunaPruningCallback(Callback):
    """Report a stat to an Optuna trial after each epoch; stop training when the trial is pruned.

    After each epoch it reports the stat's latest value with ``trial.report(value,
    step=epoch_num)`` and asks ``trial.should_prune()``. When the trial is to be pruned, training
    stops cleanly (``StopTraining``: every ``after_train`` runs, ``ModelSaver`` saves, monitors
    flush), and then ``launch_train_with_config`` raises ``optuna.TrialPruned``, so that
    ``study.optimize`` records the trial as PRUNED. The run is ``stopped (Optuna pruned trial N
    after epoch E ...)`` in ``status.json`` (``tfloop info``/``watch``), like any clean stop, and
    the trackers record it so (MLflow: ``FINISHED`` with the tag ``tfloop.stop_reason``; W&B:
    exit code 0).

    The value is read at the end of each epoch, after every callback's ``trigger_epoch`` (so an
    ``InferenceRunner`` anywhere in the list has put its stats). A stat that was not put in the
    first epoch is reported: as an error when a stat of a close name was put (a misspelling),
    else as a warning.

    Needs ``pip install 'tfloop-train[optuna]'``.

    Args:
        trial (optuna.trial.Trial): the trial given to the objective function.
        stat_name (str): the monitored scalar, e.g. ``"val-error"`` or ``"cost"``.

    Example:
        >>> def objective(trial):
        ...     lr = trial.suggest_float("lr", 1e-3, 1.0, log=True)
        ...     config = TrainConfig(model=MyModel(lr), data=data, max_epoch=10,
        ...                          callbacks=[OptunaPruningCallback(trial, "val-error")])
        ...     trainer = SimpleTrainer()
        ...     launch_train_with_config(config, trainer)   # raises TrialPruned when pruned
        ...     return trainer.monitors.get_latest("val-error")
    """

    def __init__(self, trial, stat_name):
        self._optuna = import_extra("optuna", "optuna", "OptunaPruningCallback")
        if not (hasattr(trial, "report") and hasattr(trial, "should_prune")):
            raise TypeError("OptunaPruningCallback needs the optuna.trial.Trial given to the "
                            f"objective function, got {trial!r} ({type(trial).__name__}).")
        if not isinstance(stat_name, str) or not stat_name:
            raise TypeError("OptunaPruningCallback: stat_name must be the monitored scalar's "
                            f"name, a non-empty str such as 'val-error', got {stat_name!r}.")
        self.trial = trial
        self.stat_name = stat_name
        self.pruned_at_epoch = None
        self._reported_epoch = None
        self._warned_missing = False

    def _before_train(self):
        self.pruned_at_epoch = None
        self._pending = None

    def _before_epoch(self):
        # The previous epoch's stat may have been put after this callback's trigger, in the same
        # round (by an InferenceRunner listed later).
        self._report_pending(final=True)
        self._pending = (self.epoch_num, self.global_step)

    def _trigger(self):
        self._report_pending(final=False)

    def _report_pending(self, final, may_prune=True):
        """Report the epoch not reported yet, when its stat was put after the epoch started;
        ``final``: the epoch's trigger round is over, so a stat not put now was not put."""
        if self._pending is None:
            return
        epoch, start_step = self._pending
        monitors = self.trainer.monitors
        names = monitors.scalar_names()
        history = monitors.get_history(self.stat_name) if self.stat_name in names else []
        new = [value for step, value in history if step > start_step]
        if not new:
            if final:
                self._pending = None
                if not history:
                    self._say_missing(names)
            return
        self._pending = None
        value = new[-1]
        self.trial.report(value, step=epoch)
        if may_prune and self.trial.should_prune():
            self.pruned_at_epoch = epoch
            raise StopTraining(f"Optuna pruned trial {self.trial.number} after epoch {epoch} "
                               f"({self.stat_name}={value:.6g})")

    def _say_missing(self, names):
        close = difflib.get_close_matches(self.stat_name, names, n=3, cutoff=0.6)
        if close:
            raise ValueError(f"{self}: no stat named {self.stat_name!r} was put in the first "
                             f"epoch, but {', '.join(repr(c) for c in close)} "
                             f"{'were' if len(close) > 1 else 'was'}: a misspelling? Stats put: "
                             f"{', '.join(names)}.")
        if not self._warned_missing:
            self._warned_missing = True
            logger.warning(f"{self}: no stat named {self.stat_name!r} was put in the first epoch, "
                           f"so nothing is reported to the trial. Stats put: "
                           f"{', '.join(names) or 'none'}.")

    def _after_train(self):
        if self.trainer.training_error is not None:
            return
        if self.pruned_at_epoch is None:
            if self.trainer.is_last_step:  # the last epoch ran through
                self._report_pending(final=True, may_prune=False)
            return
        pruned = self._optuna.TrialPruned(
            f"trial {self.trial.number} pruned after epoch {self.pruned_at_epoch}")
        pruned._tfloop_annotated = True  # a clean stop: no "exception in callback" error line
        pruned._tfloop_clean_stop = True  # status.json: stopped (Optuna pruned trial ...)
        raise pruned

    def __str__(self):
        return f"OptunaPruningCallback({self.stat_name!r})"
