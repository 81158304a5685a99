"""The default callbacks and monitors, end to end: the loss curve in TensorBoard and stats.json."""
import json
import os
import re

import pytest
from support import LinearModel, batches, make_regression_data
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tfloop
from tfloop import (
    JSONWriter,
    MergeAllSummaries,
    MovingAverageSummary,
    ProgressBar,
    RunUpdateOps,
    ScalarPrinter,
    TFEventWriter,
    default_callbacks,
    default_monitors,
)


class AveragedCostModel(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.add_moving_summary(cost)
        return cost



def train_with_defaults(max_epoch=3):
    x, y = make_regression_data(12)
    config = tfloop.TrainConfig(model=AveragedCostModel(), data=tfloop.FeedInput(batches(x, y, 4)),
                                max_epoch=max_epoch)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


def test_default_lists():
    assert [type(cb) for cb in default_callbacks()] == [MovingAverageSummary, ProgressBar,
                                                        MergeAllSummaries, RunUpdateOps]
    assert [type(m) for m in default_monitors()] == [TFEventWriter, JSONWriter, ScalarPrinter]


def test_loss_curve_in_tensorboard_and_stats_json(logdir, tfloop_log):
    trainer = train_with_defaults()
    history = trainer.monitors.get_history("cost")
    assert [step for step, _ in history] == [3, 6, 9]
    costs = [value for _, value in history]
    assert costs[0] > costs[1] > costs[2]

    events = EventAccumulator(logdir)
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("cost")] == [
        (step, pytest.approx(value)) for step, value in history]

    with open(os.path.join(logdir, "stats.json")) as f:
        records = json.load(f)
    assert [(r["epoch_num"], r["global_step"], r["cost"]) for r in records] == [
        (1, 3, costs[0]), (2, 6, costs[1]), (3, 9, costs[2])]

    printed = [re.sub(r" · \d+\.\d\d s", "", m) for level, m in tfloop_log
               if m.startswith("epoch ")]
    assert printed == [f"epoch {e} · step {3 * e} · cost {c:.5g}" for e, c in enumerate(costs, 1)]
    assert not [m for level, m in tfloop_log if level == "WARNING"]


def test_without_log_dir_file_monitors_are_skipped_with_one_warning(tmp_path, monkeypatch,
                                                                   tfloop_log):
    monkeypatch.chdir(tmp_path)
    trainer = train_with_defaults(max_epoch=2)
    assert [s for s, _ in trainer.monitors.get_history("cost")] == [3, 6]
    warnings = [m for level, m in tfloop_log if level == "WARNING"]
    assert warnings == ["No log directory is set, so TFEventWriter, JSONWriter are skipped: call "
                        "tfloop.utils.logger.set_logger_dir(...) before training to write them."]
    assert os.listdir(str(tmp_path)) == []
    assert len([m for level, m in tfloop_log if " · cost " in m]) == 2
