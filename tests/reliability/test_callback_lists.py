"""Callback lists as tensorpack documents them (issue 23, callback lists): the four defaults
appended to ``callbacks=`` run once, a second instance of a default is refused, a ProgressBar
on a non-numeric tensor fails at setup, AutoResumeTrainConfig without a log dir warns."""
import logging

import pytest
from support import LinearModel, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf

DEFAULTS = ["MovingAverageSummary", "ProgressBar", "MergeAllSummaries", "RunUpdateOps"]


def kinds(trainer):
    return [type(cb).__name__ for cb in trainer.callbacks if type(cb).__name__ in DEFAULTS]


def train(callbacks, **kwargs):
    """Train as a tensorpack script does: extra_callbacks left out."""
    x, y = make_regression_data(12)
    config = tfloop.TrainConfig(model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)),
                                callbacks=callbacks, max_epoch=1, **kwargs)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


def tensorpack_documented_list():
    return [tfloop.ModelSaver(), tfloop.MovingAverageSummary(), tfloop.ProgressBar(["cost"]),
            tfloop.MergeAllSummaries(), tfloop.RunUpdateOps()]


def test_the_defaults_appended_to_callbacks_run_once(logdir):
    callbacks = tensorpack_documented_list()
    trainer = train(callbacks)
    assert kinds(trainer) == DEFAULTS
    own = [cb for cb in trainer.callbacks if type(cb).__name__ in DEFAULTS]
    assert all(any(cb is mine for mine in callbacks) for cb in own)   # the user's, not ours


def test_without_them_the_defaults_are_added(logdir):
    assert kinds(train([tfloop.ModelSaver()])) == DEFAULTS


def test_a_default_given_in_both_lists_is_refused():
    with pytest.raises(ValueError, match=r"The callbacks hold 2 ProgressBar callbacks "
                                         r"\(ProgressBar, ProgressBar\): each would run"):
        train([tfloop.ProgressBar(["cost"])], extra_callbacks=[tfloop.ProgressBar()])


class WithSummary(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tf.compat.v1.summary.scalar("cost_summary", cost)
        return cost


def test_a_progress_bar_on_a_summary_string_is_refused_at_setup():
    with pytest.raises(TypeError, match=r"ProgressBar shows numbers; 'cost_summary' is the string "
                                        r"tensor cost_summary:0 \(a summary, if it is a string\)"):
        train_linear([], extra_callbacks=[tfloop.ProgressBar(["cost_summary"])],
                     model=WithSummary(), max_epoch=1)


def test_auto_resume_launched_without_a_log_directory_warns_once(caplog):
    x, y = make_regression_data(8)
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        config = tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=1,
            extra_callbacks=[], monitors=[])
        assert not [r for r in caplog.records if "cannot be resumed" in r.getMessage()]
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    assert [r.levelname for r in caplog.records if "cannot be resumed" in r.getMessage()] == [
        "WARNING"]
