"""StagingInput: staged inputs keep their order, cost no extra session call, resume exactly."""
import json
import os
import threading

import numpy as np
import pytest
from resume_support import train_resumable
from support import batches, dataset_fn, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1


class MainThreadRuns(tfloop.Callback):
    """Counts the session calls the training thread makes from ``before_train`` on."""

    _chief_only = False

    def __init__(self):
        self.runs = 0

    def _before_train(self):
        sess, main = self.trainer.sess, threading.current_thread()
        run, make_callable = sess.run, sess.make_callable
        from_options = sess._make_callable_from_options

        def counted(fn):
            def counted_call(*args, **kwargs):
                self.runs += threading.current_thread() is main
                return fn(*args, **kwargs)
            return counted_call
        sess.run = counted(run)
        sess.make_callable = lambda *args, **kwargs: counted(make_callable(*args, **kwargs))
        sess._make_callable_from_options = lambda options: counted(from_options(options))


class Seen(tfloop.Callback):
    """The first input value and the cost of every step, and the session calls per step."""

    _chief_only = False

    def __init__(self, counter=None):
        self.firsts, self.costs, self.calls_per_step = [], [], []
        self.counter = counter
        self._calls = 0

    def _setup_graph(self):
        self.x, self.cost = self.get_tensors_maybe_in_tower(["x", "cost"])

    def _before_run(self, ctx):
        return [self.x, self.cost]

    def _after_run(self, ctx, values):
        self.firsts.append(float(values.results[0][0, 0]))
        self.costs.append(float(values.results[1]))

    def _trigger_step(self):
        if self.counter is not None:
            self.calls_per_step.append(self.counter.runs - self._calls)
            self._calls = self.counter.runs


@pytest.mark.parametrize("nr_stage, queue", [(1, None), (3, 50), (2, "tf")])
def test_staged_queue_input_trains_like_feed_input_in_one_session_call_per_step(nr_stage, queue):
    x, y = make_regression_data(12)
    fed, counter = Seen(), MainThreadRuns()
    staged = Seen(counter)
    train_linear([fed], data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=3)
    if queue == "tf":
        def queue():
            return tfv1.FIFOQueue(5, [tf.float32, tf.float32])
    source = tfloop.StagingInput(tfloop.QueueInput(batches(x, y, 4), queue), nr_stage=nr_stage)
    trainer = train_linear([counter, staged], data=source, max_epoch=3)
    assert staged.firsts == fed.firsts == [float(x[i, 0]) for i in (0, 4, 8)] * 3
    assert staged.costs == fed.costs
    assert staged.calls_per_step == [1] * 9
    assert source.size() == 3 and len(source.stage_ops) == 1
    assert trainer.graph.get_tensor_by_name("x:0").op.type == "Identity"
    assert trainer.graph.get_tensor_by_name("x:0").op.inputs[0].op.type == "Unstage"


def test_staged_dataset_input_trains_like_dataset_input():
    x, y = make_regression_data(12)
    plain, staged = Seen(), Seen()
    train_linear([plain], data=tfloop.DatasetInput(dataset_fn(x, y, 4)), max_epoch=2)
    train_linear([staged], data=tfloop.StagingInput(tfloop.DatasetInput(dataset_fn(x, y, 4)),
                                                    device="/cpu:0"), max_epoch=2)
    assert staged.costs == plain.costs and len(staged.costs) == 6


@pytest.mark.parametrize("source", ["dataset", "queue", "buffer"])
def test_staged_data_of_unknown_length_ends_each_epoch_with_its_pass(source):
    from support import Flow
    x, y = make_regression_data(20)      # 5 batches a pass
    items = batches(x, y, 4)
    plain, staged = Seen(), Seen()
    make = {"dataset": lambda: tfloop.DatasetInput(
                lambda: dataset_fn(x, y, 4)().filter(lambda a, b: True)),
            "queue": lambda: tfloop.QueueInput(Flow(items, length=False)),
            "buffer": lambda: tfloop.QueueInput(Flow(items, length=False), queue=3)}[source]
    train_linear([plain], data=make(), max_epoch=3)
    trainer = train_linear([staged], data=tfloop.StagingInput(make(), nr_stage=2), max_epoch=3)
    assert trainer.global_step == 15 and trainer.expected_steps_per_epoch == 5
    assert staged.firsts == plain.firsts == [float(x[i, 0]) for i in range(0, 20, 4)] * 3
    assert staged.costs == plain.costs


def test_staging_input_refuses_feeds_steps_per_run_and_bad_arguments():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match=r"StagingInput needs a QueueInput or an input source that "
                                         r"makes its tensors in the graph .*FeedInput feeds x:0, "
                                         r"y:0\. Use QueueInput\(data\)"):
        train_linear([], data=tfloop.StagingInput(tfloop.FeedInput(batches(x, y, 4))))
    with pytest.raises(ValueError, match="StagingInput cannot be used with steps_per_run > 1"):
        train_linear([], data=tfloop.StagingInput(tfloop.QueueInput(batches(x, y, 4))),
                     steps_per_epoch=4, trainer=tfloop.SimpleTrainer(steps_per_run=2))
    with pytest.raises(ValueError, match="nr_stage must be an int >= 1, got 0"):
        tfloop.StagingInput(tfloop.QueueInput([]), nr_stage=0)
    with pytest.raises(TypeError, match="StagingInput wraps an InputSource"):
        tfloop.StagingInput(batches(x, y, 4))


@pytest.mark.slow
def test_staged_datapoints_are_not_counted_as_trained_when_resuming(tmp_path):
    x, y = make_regression_data(20)
    items = batches(x, y, 4)
    _, reference = train_resumable(str(tmp_path / "reference"),
                                   tfloop.StagingInput(tfloop.QueueInput(items), nr_stage=2))
    logdir = str(tmp_path / "log")
    _, first = train_resumable(logdir, tfloop.StagingInput(tfloop.QueueInput(items), nr_stage=2),
                               stop_at=4)
    with open(os.path.join(logdir, "model-4.resume.json")) as f:
        state = json.load(f)
    assert state["callbacks"]["_QueueFeeder#0"] == {"pass": 0, "index": 4, "consumed": 4}
    _, second = train_resumable(logdir, tfloop.StagingInput(tfloop.QueueInput(items), nr_stage=2))
    assert {**first, **second} == reference and sorted(second) == [5, 6, 7, 8, 9]
    assert not np.array_equal(reference[1], reference[9])
