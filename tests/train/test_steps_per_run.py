"""steps_per_run=k: k steps per session call give the same training as k = 1, with the counters,
fetches and schedules callbacks expect."""
import numpy as np
import pytest
from support import (
    LinearModel,
    RecordingCallback,
    RunCounter,
    dataset_fn,
    make_regression_data,
    train_linear,
)

import tfloop
from tfloop.compat import tf, tfv1

X, Y = make_regression_data(24)


def dataset():
    return tfloop.DatasetInput(dataset_fn(X, Y, 4))     # 6 batches per pass


class MomentumLinear(LinearModel):
    def optimizer(self):
        return tfv1.train.MomentumOptimizer(self.lr, 0.9)


class AdamLinear(LinearModel):
    def optimizer(self):
        return tfv1.train.AdamOptimizer(0.05)


class WeightsAtEnd(tfloop.Callback):
    _chief_only = False

    def _setup_graph(self):
        self.w_var = tfv1.trainable_variables()[0]

    def _after_train(self):
        self.w = self.trainer.sess.run(self.w_var)


class CallCounter(RunCounter):
    """Counts session calls, and how many were made by the end of each epoch."""

    def __init__(self):
        super().__init__()
        self.calls_after_epoch = []

    def _after_epoch(self):
        self.calls_after_epoch.append(self.runs)


def train(k, model=None, callbacks=(), steps_per_epoch=6, max_epoch=2, via_trainer=False,
          **kwargs):
    weights = WeightsAtEnd()
    log = []
    recorder = RecordingCallback("r", log, fetches=["cost"])
    trainer = tfloop.SimpleTrainer(steps_per_run=k) if via_trainer else None
    if not via_trainer:
        kwargs["steps_per_run"] = k
    trainer = train_linear([recorder, weights] + list(callbacks), data=dataset(),
                           model=model or LinearModel(), steps_per_epoch=steps_per_epoch,
                           max_epoch=max_epoch, trainer=trainer, **kwargs)
    return trainer, weights.w, log


@pytest.mark.parametrize("model_cls", [LinearModel, MomentumLinear, AdamLinear])
def test_k_steps_per_call_train_exactly_like_one(model_cls):
    _, w1, log1 = train(1, model=model_cls())
    trainer, w3, log3 = train(3, model=model_cls())
    np.testing.assert_allclose(w3, w1, rtol=1e-6, atol=1e-7)
    assert trainer.global_step == 12
    # Fetches come from the last step of each call: costs of steps 3, 6, 9, 12 of the k = 1 run.
    costs1 = [e[5][0] for e in log1 if e[1] == "after_run"]
    costs3 = [e[5][0] for e in log3 if e[1] == "after_run"]
    np.testing.assert_allclose(costs3, costs1[2::3], rtol=1e-6)


def test_callbacks_see_global_step_advance_by_k_and_local_step_at_the_call_end():
    counter = CallCounter()
    trainer, _, log = train(3, callbacks=[counter], via_trainer=True)
    steps = [(e[1], e[2], e[3], e[4]) for e in log if e[1] in ("before_run", "trigger_step")]
    assert steps == [
        ("before_run", 1, 0, 2), ("trigger_step", 1, 3, 2),
        ("before_run", 1, 3, 5), ("trigger_step", 1, 6, 5),
        ("before_run", 2, 6, 2), ("trigger_step", 2, 9, 2),
        ("before_run", 2, 9, 5), ("trigger_step", 2, 12, 5),
    ]
    assert counter.calls_after_epoch == [2, 4], "one session call per k steps, nothing else"
    assert trainer.loop.steps_per_run == 3


def test_step_schedules_that_are_multiples_of_k_land_exactly():
    log = []
    saver = RecordingCallback("p", log)
    _, _, _ = train(3, callbacks=[tfloop.PeriodicTrigger(saver, every_k_steps=6)], max_epoch=2)
    assert [e[3] for e in log if e[1] == "trigger"] == [6, 12]


def test_a_step_period_that_is_not_a_multiple_of_k_is_refused():
    with pytest.raises(ValueError, match=r"every 4 steps, which is not a multiple of "
                                         r"steps_per_run=3"):
        train(3, callbacks=[tfloop.PeriodicTrigger(RecordingCallback("p", []), every_k_steps=4)])


def test_steps_per_epoch_must_be_a_multiple_of_k():
    with pytest.raises(ValueError, match=r"steps_per_epoch \(6\) must be a multiple of "
                                         r"steps_per_run \(4\)"):
        train(4)


def test_fed_input_is_refused():
    with pytest.raises(ValueError, match="needs an input source that makes a new batch inside the "
                                         "graph.*FeedInput feeds"):
        train_linear([], steps_per_run=3, steps_per_epoch=3, max_epoch=1)


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-2, ValueError), (1.5, TypeError),
                                        (True, TypeError), ("3", TypeError)])
def test_bad_steps_per_run_values_are_refused(bad, error):
    with pytest.raises(error, match="steps_per_run must be an int >= 1, got"):
        tfloop.SimpleTrainer(steps_per_run=bad)
    with pytest.raises(error, match="steps_per_run must be an int >= 1, got"):
        tfloop.TrainConfig(model=LinearModel(), data=dataset(), steps_per_epoch=6,
                           steps_per_run=bad)


def test_a_trainer_without_an_in_graph_loop_refuses_k_above_one():
    with pytest.raises(TypeError, match="NoOpTrainer does not support steps_per_run > 1"):
        train_linear([], data=dataset(), steps_per_epoch=6, trainer=tfloop.NoOpTrainer(),
                     steps_per_run=3)


class FreshVariableModel(LinearModel):
    def build_graph(self, x, y):
        scale = tfv1.Variable(1.0, name="scale")      # a new variable on every call
        return scale * super().build_graph(x, y)


def test_a_model_creating_new_variables_on_each_call_is_refused():
    with pytest.raises(ValueError, match=r"inside the loop created new variables \(scale_1:0\)"):
        train(3, model=FreshVariableModel())


class SummarizedLinear(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.add_moving_summary(cost)
        return cost


def test_default_callbacks_fetch_the_last_step_and_summaries_come_once_per_epoch(logdir):
    config = tfloop.TrainConfig(model=SummarizedLinear(), data=dataset(), steps_per_epoch=6,
                                max_epoch=2, steps_per_run=3)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config, trainer)
    history = trainer.monitors.get_history("cost")
    assert [step for step, _ in history] == [6, 12]
    # The moving average is updated once per call, with the cost of the call's last step.
    _, _, log1 = train(1)
    costs = [e[5][0] for e in log1 if e[1] == "after_run"][2::3]
    biased, averages = 0.0, []
    for t, c in enumerate(costs, 1):
        biased = 0.95 * biased + 0.05 * c
        averages.append(biased / (1 - 0.95 ** t))
    np.testing.assert_allclose([v for _, v in history], averages[1::2], rtol=1e-4)
    assert tf.io.gfile.glob(logdir + "/events.out.tfevents.*")


class LRLinear(LinearModel):
    def optimizer(self):
        lr = tfv1.get_variable("learning_rate", initializer=0.1, trainable=False)
        return tfv1.train.GradientDescentOptimizer(lr)


class ScalarLog(tfloop.MonitorBase):
    def __init__(self):
        self.seen = []

    def process_scalar(self, name, value):
        self.seen.append((self.global_step, name, round(value, 6)))


def test_a_step_schedule_point_between_calls_takes_effect_at_the_next_call_with_a_warning(caplog):
    monitor = ScalarLog()
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (4, 0.02), (9, 0.01)],
                                              step_based=True)
    train(3, model=LRLinear(), callbacks=[setter], monitors=[monitor])
    assert "step-based schedule points [4] are not multiples of steps_per_run=3" in caplog.text
    assert [s for s in monitor.seen if s[1] == "learning_rate"] == [
        (0, "learning_rate", 0.1), (6, "learning_rate", 0.02),   # set after the call ending at 6
        (6, "learning_rate", 0.02), (9, "learning_rate", 0.01)]  # epoch 2 starts with it


def test_summaries_with_a_period_are_fetched_at_the_end_of_the_call_that_reaches_it(logdir):
    monitor = ScalarLog()

    class Summarized(LinearModel):
        def build_graph(self, x, y):
            cost = super().build_graph(x, y)
            tfv1.summary.scalar("cost_summary", cost)
            return cost
    _, _, log1 = train(1, model=Summarized(), max_epoch=2)
    costs = [e[5][0] for e in log1 if e[1] == "after_run"]
    train(3, model=Summarized(), max_epoch=2, monitors=[monitor],
          extra_callbacks=[tfloop.MergeAllSummaries(period=9)])
    seen = [(step, value) for step, name, value in monitor.seen if name == "cost_summary"]
    assert [step for step, _ in seen] == [6, 9, 12]
    np.testing.assert_allclose([v for _, v in seen], [costs[5], costs[8], costs[11]], atol=1e-6)
    with pytest.raises(ValueError, match=r"MergeAllSummaries\(period=4\) runs every 4 steps"):
        train(3, model=Summarized(), extra_callbacks=[tfloop.MergeAllSummaries(period=4)])


def test_the_progress_bar_counts_steps_not_calls():
    import io
    out = io.StringIO()
    train(3, extra_callbacks=[tfloop.ProgressBar(file=out)], max_epoch=1)
    assert "6/6" in out.getvalue() and "2/6" not in out.getvalue()
