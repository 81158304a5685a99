"""MovingAverageSummary and MergeAllSummaries: values, timing, and no extra session runs."""
import numpy as np
import pytest
from support import (
    FINAL_WEIGHTS_READ,
    LinearModel,
    RunCounter,
    batches,
    expected_ema,
    make_regression_data,
    train_linear,
)

import tfloop
from tfloop import Callback, MergeAllSummaries, MonitorBase, MovingAverageSummary, ProcessTensors


class SummarizedModel(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.add_moving_summary(cost, decay=0.5)
        tfloop.add_param_summary(("w", ["histogram", "rms"]))
        return cost


class SummaryLog(MonitorBase):
    def __init__(self):
        self.steps = []

    def process_summary(self, summary):
        self.steps.append((self.global_step, sorted(v.tag for v in summary.value)))


class ReadCostAtTrigger(Callback):
    """What a user callback's trigger_epoch sees of the moving average."""

    def __init__(self):
        self.seen = []

    def _trigger_epoch(self):
        self.seen.append(self.trainer.monitors.get_history("cost")[-1])


def test_moving_average_of_every_step_is_put_before_trigger_epoch():
    costs = []
    reader = ReadCostAtTrigger()
    trainer = train_linear([ProcessTensors(["cost"], costs.append), reader],
                           model=SummarizedModel(), extra_callbacks=[MovingAverageSummary()])
    ema = expected_ema([float(c) for c in costs], 0.5)
    history = trainer.monitors.get_history("cost")
    assert [step for step, _ in history] == [3, 6]
    np.testing.assert_allclose([v for _, v in history], [ema[2], ema[5]], rtol=1e-5)
    assert reader.seen == history


def test_moving_average_summary_without_averages_is_not_in_the_step():
    cb = MovingAverageSummary(collection="NO_AVERAGES_HERE")
    trainer = train_linear(extra_callbacks=[cb], max_epoch=1)
    assert cb not in trainer.run_callbacks
    assert trainer.monitors.scalar_names() == []


@pytest.mark.parametrize("period, steps", [(0, [3, 6]), (2, [2, 3, 4, 6]), (4, [3, 4, 6])])
def test_merged_summaries_come_with_the_last_step_of_each_epoch_and_every_period(period, steps):
    log = SummaryLog()
    trainer = train_linear(model=SummarizedModel(), monitors=[log],
                           extra_callbacks=[MergeAllSummaries(period=period)])
    assert log.steps == [(s, ["param-summary/w-histogram", "param-summary/w-rms"]) for s in steps]
    assert [s for s, _ in trainer.monitors.get_history("param-summary/w-rms")] == steps


@pytest.mark.parametrize("period, steps", [(0, [1, 6, 9]), (2, [1, 2, 4, 6, 8, 9])])
def test_with_passes_the_summaries_come_with_the_first_step_then_the_learnt_last_one(period,
                                                                                    steps):
    # Passes of 3 batches of unknown length: no step is known to be the last in the first pass.
    from tfloop.compat import tf
    x, y = make_regression_data(12)
    data = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: True).batch(4)
    log = SummaryLog()
    train_linear(model=SummarizedModel(), data=data, monitors=[log], max_epoch=3,
                 extra_callbacks=[MergeAllSummaries(period=period)])
    assert [s for s, _ in log.steps] == steps


def test_merge_all_summaries_uses_the_given_collection():
    class KeyedModel(LinearModel):
        def build_graph(self, x, y):
            cost = super().build_graph(x, y)
            tfloop.add_tensor_summary(cost, ["mean"], name="loss", collections=["rare"])
            return cost

    trainer = train_linear(model=KeyedModel(), extra_callbacks=[MergeAllSummaries(key="rare")])
    assert [s for s, _ in trainer.monitors.get_history("loss-mean")] == [3, 6]


def test_summaries_add_no_session_runs():
    def runs(extra_callbacks):
        counter = RunCounter()
        train_linear([counter], model=SummarizedModel(), extra_callbacks=extra_callbacks,
                     max_epoch=3)
        return counter.runs

    with_summaries = runs([MovingAverageSummary(), MergeAllSummaries(period=2)])
    assert with_summaries == 9 + FINAL_WEIGHTS_READ  # one run per step, 3 epochs x 3 steps
    assert runs([]) == with_summaries


def test_without_summaries_merge_all_is_not_in_the_step():
    cb = MergeAllSummaries()
    trainer = train_linear(extra_callbacks=[cb], max_epoch=1)
    assert cb not in trainer.run_callbacks


@pytest.mark.parametrize("period", [-1, "1.5", True])
def test_bad_period_is_rejected(period):
    with pytest.raises(ValueError, match="period must be an int >= 0"):
        MergeAllSummaries(period=period)



def test_run_alone_evaluates_the_summaries_in_their_own_session_runs_at_the_same_points():
    log, counter = SummaryLog(), RunCounter()
    cb = MergeAllSummaries(2, True)
    train_linear([counter], model=SummarizedModel(), monitors=[log], extra_callbacks=[cb])
    assert cb not in counter.trainer.run_callbacks
    assert log.steps == [(s, ["param-summary/w-histogram", "param-summary/w-rms"])
                         for s in [2, 3, 4, 6]]
    assert counter.runs == 6 + 4 + FINAL_WEIGHTS_READ
    assert str(cb) == "MergeAllSummaries(period=2, run_alone=True)"
    with pytest.raises(TypeError, match="run_alone must be True or False"):
        MergeAllSummaries(0, "summaries")


def test_simple_moving_average_puts_the_window_mean_every_window_steps():
    from tfloop import SimpleMovingAverage
    costs = []
    trainer = train_linear([ProcessTensors(["cost"], costs.append),
                            SimpleMovingAverage(["cost:0"], 2)], max_epoch=2)
    history = trainer.monitors.get_history("cost/SMA")
    assert [step for step, _ in history] == [2, 4, 6]
    np.testing.assert_allclose([v for _, v in history],
                               [np.mean(costs[0:2]), np.mean(costs[2:4]), np.mean(costs[4:6])],
                               rtol=1e-6)
    with pytest.raises(ValueError, match="window_size must be an int >= 1"):
        SimpleMovingAverage(["cost"], 0)


class OftenModel(LinearModel):
    """A summary in SUMMARIES and one in collection "OFTEN" (tensorpack's way to evaluate part
    of the summaries at another frequency)."""

    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.tfv1.summary.scalar("every_epoch", cost)
        tfloop.tfv1.summary.scalar("often", cost, collections=["OFTEN"])
        return cost


def train_with_defaults(callbacks, monitors=()):
    """Train OftenModel for 2 epochs of 3 steps as a tensorpack script does: extra_callbacks
    left out, so the default callbacks are added."""
    x, y = make_regression_data(12)
    config = tfloop.TrainConfig(model=OftenModel(), data=tfloop.FeedInput(batches(x, y, 4)),
                                callbacks=callbacks, monitors=list(monitors), max_epoch=2)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    return trainer


def test_a_second_merge_all_summaries_on_another_key_runs_beside_the_default_one():
    log = SummaryLog()
    often = MergeAllSummaries(period=2, key="OFTEN")
    trainer = train_with_defaults([often], monitors=[log])
    merges = [cb for cb in trainer.callbacks if isinstance(cb, MergeAllSummaries)]
    assert [str(cb) for cb in merges] == ["MergeAllSummaries(period=2, key='OFTEN')",
                                          "MergeAllSummaries(period=0)"]
    # 2 epochs of 3 steps: OFTEN every 2 steps and at each epoch's end, SUMMARIES at the ends.
    often_steps = [s for s, tags in log.steps if "often" in tags]
    epoch_steps = [s for s, tags in log.steps if "every_epoch" in tags]
    assert (often_steps, epoch_steps) == ([2, 3, 4, 6], [3, 6])


def test_two_merge_all_summaries_on_one_key_are_refused():
    with pytest.raises(ValueError, match=r"The callbacks hold 2 MergeAllSummaries callbacks "
                                         r"\(MergeAllSummaries\(period=2, key='OFTEN'\), "
                                         r"MergeAllSummaries\(period=0, key='OFTEN'\)\)"):
        train_linear([MergeAllSummaries(period=2, key="OFTEN")], model=OftenModel(),
                     extra_callbacks=[MergeAllSummaries(key="OFTEN")])


def test_a_merge_all_summaries_on_the_default_key_replaces_the_default_one():
    mine = MergeAllSummaries(period=2)
    trainer = train_with_defaults([mine])
    assert [cb for cb in trainer.callbacks if isinstance(cb, MergeAllSummaries)] == [mine]
