"""OptunaPruningCallback with real Optuna studies: what each trial records, and how a pruned
training ends."""
import logging

import optuna
import pytest
from support import RecordingCallback, train_linear

import tfloop

optuna.logging.set_verbosity(optuna.logging.WARNING)


class PutStat(tfloop.Callback):
    """Puts ``values[epoch - 1]`` as ``name`` at the end of each epoch."""

    _chief_only = False

    def __init__(self, values, name="val-error"):
        self.values, self.name = values, name

    def _trigger(self):
        self.trainer.monitors.put_scalar(self.name, self.values[self.epoch_num - 1])


def optimize(pruner, callbacks_of_trial, max_epoch=3):
    """One trial of a study with ``pruner``; return the study."""
    study = optuna.create_study(pruner=pruner)

    def objective(trial):
        trainer = tfloop.SimpleTrainer()
        train_linear(callbacks_of_trial(trial), max_epoch=max_epoch, trainer=trainer,
                     extra_callbacks=[])
        return trainer.monitors.get_latest("val-error")
    study.optimize(objective, n_trials=1)
    return study


def test_reports_the_latest_value_after_each_epoch_with_the_epoch_as_step():
    study = optimize(optuna.pruners.NopPruner(), lambda trial: [
        tfloop.OptunaPruningCallback(trial, "val-error"), PutStat([0.5, 0.25, 0.125])])
    trial = study.trials[0]
    assert trial.state == optuna.trial.TrialState.COMPLETE
    # The stat is put by a callback listed after the pruning callback: still reported per epoch.
    assert trial.intermediate_values == {1: 0.5, 2: 0.25, 3: 0.125}
    assert trial.value == 0.125


def test_a_pruned_trial_stops_cleanly_and_is_recorded_pruned(tfloop_log):
    log = []
    study = optimize(optuna.pruners.ThresholdPruner(upper=0.3), lambda trial: [
        PutStat([0.2, 0.4, 0.1]), tfloop.OptunaPruningCallback(trial, "val-error"),
        RecordingCallback("rec", log)])
    trial = study.trials[0]
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert trial.intermediate_values == {1: 0.2, 2: 0.4}
    assert [entry[1:4] for entry in log if entry[1] in ("trigger", "after_train")] == [
        ("trigger", 1, 3), ("after_train", 2, 6)]
    assert [m for level, m in tfloop_log if level == "ERROR"] == []
    assert ("INFO", "Training stopped: Optuna pruned trial 0 after epoch 2 "
                    "(val-error=0.4)") in tfloop_log


def test_launch_raises_trial_pruned():
    study = optuna.create_study(pruner=optuna.pruners.ThresholdPruner(upper=0.0))
    trial = study.ask()
    with pytest.raises(optuna.TrialPruned, match="trial 0 pruned after epoch 1"):
        train_linear([tfloop.OptunaPruningCallback(trial, "val-error"), PutStat([1.0, 1.0])])


def test_a_misspelled_stat_is_an_error_after_the_first_epoch():
    trial = optuna.create_study().ask()
    with pytest.raises(ValueError, match=r"no stat named 'val_error' was put in the first "
                                         r"epoch, but 'val-error' was: a misspelling\?"):
        train_linear([tfloop.OptunaPruningCallback(trial, "val_error"), PutStat([1.0, 1.0])])


def test_a_stat_never_put_is_a_warning(caplog):
    trial = optuna.create_study().ask()
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        train_linear([tfloop.OptunaPruningCallback(trial, "accuracy"), PutStat([1.0] * 3)],
                     max_epoch=3)
    assert caplog.text.count("no stat named 'accuracy' was put in the first epoch") == 1
    assert trial.storage.get_trial(trial._trial_id).intermediate_values == {}


@pytest.mark.parametrize("trial,stat,match", [
    (None, "cost", "needs the optuna.trial.Trial"),
    ("trial", "", "stat_name must be"),
])
def test_bad_arguments(trial, stat, match):
    if trial == "trial":
        trial = optuna.create_study().ask()
    with pytest.raises(TypeError, match=match):
        tfloop.OptunaPruningCallback(trial, stat)


def test_a_pruned_run_is_stopped_in_its_log_dir_and_watch_exits_0(logdir, capsys):
    from tfloop.cli import main
    study = optimize(optuna.pruners.ThresholdPruner(upper=0.3), lambda trial: [
        PutStat([0.2, 0.4, 0.1]), tfloop.OptunaPruningCallback(trial, "val-error")])
    assert study.trials[0].state == optuna.trial.TrialState.PRUNED
    reason = "Optuna pruned trial 0 after epoch 2 (val-error=0.4)"
    status = tfloop.utils.read_run_status(logdir)
    assert (status.state, status.reason) == ("stopped", reason)
    capsys.readouterr()
    assert main(["info", logdir]) == 0
    assert f"status         stopped ({reason})" in capsys.readouterr().out
    assert main(["watch", logdir]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"The run stopped ({reason})."
