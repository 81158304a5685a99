"""Every periodic form fires where the one convention says, in one 35-step training (5 epochs of 7
steps, period 10): the hooks of "every 10 steps" go with the steps that end at global step 10,
20 and 30 — ``before_run`` sees 9, 19, 29, everything after the step sees 10, 20, 30 — so a
callback's fetches and its trigger see the same step. Also with ``steps_per_run=5``, and for
wrappers inside wrappers."""
import pytest
from support import (
    LearningRateLog,
    LRModel,
    LRRecorder,
    RecordingCallback,
    dataset_fn,
    make_regression_data,
    train_linear,
)

import tfloop
from tfloop.compat import tfv1

EPOCH_ENDS = [7, 14, 21, 28, 35]


class SummarizedLRModel(LRModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfv1.summary.scalar("cost_summary", cost)
        return cost


class Puts(tfloop.MonitorBase):
    """The global step of every summary and of every scalar put, by name."""

    def __init__(self):
        self.summaries, self.scalars = [], {}

    def process_summary(self, summary):
        self.summaries.append(self.global_step)

    def process_scalar(self, name, value):
        self.scalars.setdefault(name, []).append(self.global_step)


class EveryTen(RecordingCallback):
    """A plain callback stating its own period."""

    when = tfloop.Schedule(every_k_steps=10)


class Tick(tfloop.Callback):
    """One "second" per step, on a clock of its own."""

    def __init__(self):
        self.now = 0.0

    def clock(self):
        return self.now

    def _trigger_step(self):
        self.now += 1.0


def steps(log, name, hook):
    """The global step each call of ``hook`` of callback ``name`` saw."""
    return [entry[3] for entry in log if entry[0] == name and entry[1] == hook]


def hooks(log, name):
    return {hook: steps(log, name, hook) for hook in
            ("before_run", "after_run", "trigger_step", "before_epoch", "after_epoch", "trigger")}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One training with every periodic form: what each recorded."""
    log, tick, holder, seen = [], Tick(), type("Holder", (), {"x": 0})(), []

    def record(name):
        return RecordingCallback(name, log)

    def func(step, value):
        seen.append(step)

    puts, lr_log, lrs = Puts(), LearningRateLog(), LRRecorder()
    writer = tfloop.JSONWriter(every_k_steps=10, logdir=str(tmp_path_factory.mktemp("logdir")))
    callbacks = [
        tick, lrs,
        tfloop.PeriodicTrigger(record("pt_steps"), every_k_steps=10),
        tfloop.PeriodicTrigger(record("pt_epochs"), every_k_epochs=2, before_train=True),
        tfloop.PeriodicTrigger(record("pt_seconds"), every_k_seconds=10, clock=tick.clock),
        tfloop.PeriodicCallback(record("pc_steps"), every_k_steps=10),
        tfloop.PeriodicCallback(record("pc_epochs"), every_k_epochs=2),
        tfloop.EnableCallbackIf(record("enabled"), lambda self: self.epoch_num == 3),
        EveryTen("plain", log),
        tfloop.SimpleMovingAverage(["cost"], 10),
        tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (10, 0.05), (25, 0.01)],
                                         step_based=True),
        tfloop.HyperParamSetterWithFunc(tfloop.ObjAttrParam(holder, "x"), func, step_based=True),
    ]
    trainer = train_linear(callbacks, model=SummarizedLRModel(), steps_per_epoch=7, max_epoch=5,
                           monitors=[puts, lr_log, writer],
                           extra_callbacks=[tfloop.MergeAllSummaries(period=10)])
    assert trainer.global_step == 35
    return {"log": log, "puts": puts, "lr_log": lr_log.seen, "lrs": lrs.lrs,
            "records": [r["global_step"] for r in writer.records], "func": seen}


def test_periodic_trigger_every_k_steps_triggers_after_the_steps_that_reach_a_multiple(trained):
    log = trained["log"]
    assert steps(log, "pt_steps", "trigger") == [10, 20, 30]
    assert steps(log, "pt_steps", "trigger_step") == list(range(1, 36))   # its own hooks: as is
    assert steps(log, "pt_steps", "before_run") == list(range(35))


def test_periodic_trigger_every_k_epochs_and_before_train(trained):
    assert steps(trained["log"], "pt_epochs", "trigger") == [0, 14, 28]
    assert steps(trained["log"], "pt_epochs", "after_epoch") == EPOCH_ENDS


def test_periodic_trigger_every_k_seconds_fires_at_the_first_step_starting_k_seconds_later(
        trained):
    # The clock reads n - 1 when step n starts: steps 11, 21, 31 start 10 s after the last firing.
    assert steps(trained["log"], "pt_seconds", "trigger") == [11, 21, 31]


def test_periodic_callback_every_k_steps_fetches_and_triggers_with_the_same_steps(trained):
    assert hooks(trained["log"], "pc_steps") == {
        "before_run": [9, 19, 29], "after_run": [10, 20, 30], "trigger_step": [10, 20, 30],
        # epoch hooks when global_step is a multiple of 10 at the time: only epoch 1's start
        "before_epoch": [0], "after_epoch": [], "trigger": []}


def test_periodic_callback_every_k_epochs_runs_every_hook_of_those_epochs(trained):
    epochs_2_and_4 = list(range(8, 15)) + list(range(22, 29))
    assert hooks(trained["log"], "pc_epochs") == {
        "before_run": [s - 1 for s in epochs_2_and_4], "after_run": epochs_2_and_4,
        "trigger_step": epochs_2_and_4, "before_epoch": [7, 21], "after_epoch": [14, 28],
        "trigger": [14, 28]}


def test_enable_callback_if_asks_its_predicate_at_every_hook(trained):
    epoch_3 = list(range(15, 22))
    assert hooks(trained["log"], "enabled") == {
        "before_run": [s - 1 for s in epoch_3], "after_run": epoch_3, "trigger_step": epoch_3,
        "before_epoch": [14], "after_epoch": [21], "trigger": [21]}


def test_a_plain_callback_with_a_step_schedule_works_at_those_steps_only(trained):
    assert hooks(trained["log"], "plain") == {
        "before_run": [9, 19, 29], "after_run": [10, 20, 30], "trigger_step": [10, 20, 30],
        "before_epoch": [0, 7, 14, 21, 28], "after_epoch": EPOCH_ENDS, "trigger": EPOCH_ENDS}


def test_merge_all_summaries_with_a_period_writes_at_the_multiples_and_epoch_ends(trained):
    assert trained["puts"].summaries == [7, 10, 14, 20, 21, 28, 30, 35]


def test_simple_moving_average_is_put_at_the_multiples_of_its_window(trained):
    assert trained["puts"].scalars["cost/SMA"] == [10, 20, 30]


def test_json_writer_records_at_the_multiples_and_at_each_epoch_end(trained):
    assert trained["records"] == [7, 10, 14, 20, 21, 28, 30, 35]


def test_step_based_setters_set_after_the_steps_that_reach_their_points(trained):
    lrs = trained["lrs"]       # the learning rate each step trained with
    assert lrs == pytest.approx([0.1] * 10 + [0.05] * 15 + [0.01] * 10)
    changes = [(step, lr) for step, lr in trained["lr_log"] if step not in [0] + EPOCH_ENDS]
    assert changes == [(10, 0.05), (25, 0.01)]
    assert trained["func"] == list(range(36))      # before training, then after every step


def dataset_input():
    x, y = make_regression_data(20)
    return tfloop.DatasetInput(dataset_fn(x, y, 4))


def test_with_steps_per_run_every_k_steps_is_the_call_that_reaches_a_multiple(log_warnings):
    log, puts, lrs = [], Puts(), LRRecorder()
    callbacks = [
        lrs,
        tfloop.PeriodicTrigger(RecordingCallback("pt", log), every_k_steps=10),
        tfloop.PeriodicCallback(RecordingCallback("pc", log), every_k_steps=10),
        EveryTen("plain", log),
        tfloop.SimpleMovingAverage(["cost"], 10),
        tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.1), (12, 0.05)],
                                         step_based=True),
    ]
    train_linear(callbacks, data=dataset_input(), model=SummarizedLRModel(), steps_per_epoch=35,
                 max_epoch=1, steps_per_run=5, monitors=[puts],
                 extra_callbacks=[tfloop.MergeAllSummaries(period=10)])
    assert steps(log, "pt", "trigger") == [10, 20, 30]
    assert steps(log, "pt", "trigger_step") == [5, 10, 15, 20, 25, 30, 35]
    for name in ("pc", "plain"):
        assert steps(log, name, "before_run") == [5, 15, 25]
        assert steps(log, name, "after_run") == steps(log, name, "trigger_step") == [10, 20, 30]
    assert puts.summaries == [10, 20, 30, 35]
    assert puts.scalars["cost/SMA"] == [10, 20, 30]
    # Point 12 lies inside the call of steps 11-15: set after it, the next call trains with it.
    assert lrs.lrs == pytest.approx([0.1] * 3 + [0.05] * 4)
    assert any("step-based schedule points [12]" in message for message in log_warnings)


def test_wrappers_inside_wrappers_follow_every_schedule_on_the_way():
    log = []
    summaries = Puts()
    callbacks = [
        # the inner callback's own period, kept only in even epochs
        tfloop.PeriodicCallback(EveryTen("inner", log), every_k_epochs=2),
        # a trigger every 10 steps, only while the predicate holds
        tfloop.EnableCallbackIf(tfloop.PeriodicTrigger(RecordingCallback("pt", log),
                                                       every_k_steps=10),
                                lambda self: self.epoch_num >= 3),
        tfloop.PeriodicTrigger(tfloop.MergeAllSummaries(period=10, key="OFTEN"),
                               every_k_epochs=5),
    ]

    class Often(LRModel):
        def build_graph(self, x, y):
            cost = super().build_graph(x, y)
            tfv1.summary.scalar("often", cost, collections=["OFTEN"])
            return cost

    train_linear(callbacks, model=Often(), steps_per_epoch=7, max_epoch=5, monitors=[summaries])
    # of the multiples of 10, only step 10 ends in an even epoch (2); 20 and 30 end epochs 3, 5
    assert steps(log, "inner", "after_run") == steps(log, "inner", "trigger_step") == [10]
    assert steps(log, "inner", "trigger") == [14, 28]
    assert steps(log, "pt", "trigger") == [20, 30]
    # MergeAllSummaries' own schedule still fetches; its trigger (nothing: it fetches with the
    # steps) only every 5 epochs
    assert summaries.summaries == [7, 10, 14, 20, 21, 28, 30, 35]
