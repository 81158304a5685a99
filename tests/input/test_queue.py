"""QueueInput / BatchQueueInput: prefetching Python data through a TF queue, errors, shutdown,
statistics and exact resume."""
import json
import os
import re
import signal
import threading
import time
import traceback

import numpy as np
import pytest
from resume_support import train_resumable
from support import Flow, LinearModel, StepValues, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1


def loader_threads():
    return [t for t in threading.enumerate() if t.name.endswith(" loader")]


@pytest.fixture(autouse=True)
def _no_loader_thread_left():
    yield
    assert loader_threads() == []


class OnStep(tfloop.Callback):
    def __init__(self, fn):
        self.fn = fn

    def _trigger_step(self):
        self.fn(self)


class Recorder(tfloop.MonitorBase):
    def __init__(self):
        self.scalars = []

    def process_scalar(self, name, value):
        self.scalars.append((name, self.epoch_num, value))


def data(n=12, batch=4):
    x, y = make_regression_data(n)
    return batches(x, y, batch)


def tf_queue(capacity=5):
    """A function building a TensorFlow queue for LinearModel's inputs."""
    return lambda: tfv1.FIFOQueue(capacity, [tf.float32, tf.float32], name="my_queue")


@pytest.mark.parametrize("queue", [None, 1, "tf"])
def test_queue_input_trains_exactly_like_feed_input_and_its_thread_ends(queue):
    fed, queued = StepValues("cost", float), StepValues("cost", float)
    train_linear([fed], data=tfloop.FeedInput(data()), max_epoch=3)
    source = tfloop.QueueInput(data(), tf_queue() if queue == "tf" else queue)
    trainer = train_linear([queued], data=source, max_epoch=3)
    assert len(queued.values) == 9 and trainer.global_step == 9
    assert queued.values == fed.values
    x = trainer.graph.get_tensor_by_name("x:0")
    if queue == 1:
        assert source.queue is None and x.op.type == "Placeholder"
    else:
        name = "my_queue" if queue == "tf" else "queue"
        assert source.queue.queue_ref.op.name == f"QueueInput/{name}"
        assert x.op.type == "Identity"


def test_a_python_iterable_as_data_means_queue_input():
    trainer = train_linear([], data=data(12, 6), max_epoch=2)
    assert type(trainer.input_source) is tfloop.QueueInput
    assert trainer.global_step == 4


def test_a_dataflow_without_length_is_reset_once_and_trains_one_pass_per_epoch():
    flow = Flow(data(), length=False)
    trainer = train_linear([], data=tfloop.QueueInput(flow), max_epoch=2)
    assert trainer.global_step == 6 and trainer.expected_steps_per_epoch == 3
    assert flow.resets == 1


def test_steps_per_epoch_fixes_the_epochs_of_a_dataflow_without_length():
    flow = Flow(data(), length=False)
    log = StepValues("cost", float)
    train_linear([log], data=tfloop.QueueInput(flow), steps_per_epoch=5, max_epoch=2)
    assert flow.resets == 1 and len(log.values) == 10
    assert flow.passes >= 4


def test_the_loaders_exception_is_raised_in_the_training_thread_naming_the_datapoint():
    with pytest.raises(KeyError) as info:
        train_linear([], data=tfloop.QueueInput(Flow(data(), fail_at=2)), max_epoch=2)
    error = info.value
    assert error.args == ("record 2 is missing",)
    assert ("raised in QueueInput's loader thread at datapoint 2 of pass 0 of the data "
            "(2 datapoints were queued before it)") in error.__notes__
    frames = [f.name for f in traceback.extract_tb(error.__traceback__)]
    assert frames[-2:] == ["__iter__", "produce_broken_datapoint"]
    assert "main_loop" in frames


def test_a_datapoint_that_does_not_fit_the_inputs_names_its_index():
    items = data()
    x, y = items[1]
    items[1] = (x[:, :2], y)
    with pytest.raises(ValueError, match=r"QueueInput datapoint 1: got shape \(4, 2\) for input "
                                         r"x: float32 \(None, 3\)\."):
        train_linear([], data=tfloop.QueueInput(items))
    with pytest.raises(ValueError, match=r"QueueInput datapoint 0 must be a list of 2 components"):
        train_linear([], data=tfloop.QueueInput([(x,)]))


def test_a_one_shot_generator_that_runs_out_is_an_error():
    gen = (dp for dp in data())
    with pytest.raises(ValueError, match=r"QueueInput's data ran out after 3 datapoints and yields "
                                         r"nothing when iterated again"):
        train_linear([], data=tfloop.QueueInput(gen), steps_per_epoch=3, max_epoch=2)


class Raise(tfloop.Callback):
    def __init__(self, error, step):
        self.error, self.step = error, step

    def _trigger_step(self):
        if self.global_step == self.step:
            raise self.error


@pytest.mark.parametrize("error", [tfloop.StopTraining("enough"), RuntimeError("boom")])
def test_the_thread_ends_on_stop_training_and_on_an_error(error):
    flow = Flow(data())
    if isinstance(error, tfloop.StopTraining):
        trainer = train_linear([Raise(error, 2)], data=tfloop.QueueInput(flow), max_epoch=5)
        assert trainer.global_step == 2
    else:
        with pytest.raises(RuntimeError, match="boom"):
            train_linear([Raise(error, 2)], data=tfloop.QueueInput(flow), max_epoch=5)


@pytest.mark.parametrize("signum, raised", [(signal.SIGINT, KeyboardInterrupt),
                                            (signal.SIGTERM, SystemExit)])
def test_a_signal_while_training_waits_for_a_slow_loader_stops_cleanly(signum, raised):
    steps = []
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signum))
    started = tfloop.CallbackFactory(before_train=lambda self: timer.start())
    counter = OnStep(lambda self: steps.append(self.global_step))
    try:
        with pytest.raises(raised):
            train_linear([started, counter], data=tfloop.QueueInput(Flow(data(), delay=0.2)),
                         max_epoch=100)
    finally:
        timer.cancel()
    assert 0 < len(steps) < 10


def test_queue_size_is_put_each_epoch_and_a_starving_loader_is_warned_about(log_warnings):
    recorder = Recorder()
    train_linear([], data=tfloop.QueueInput(Flow(data(), delay=0.1)), max_epoch=2,
                 monitors=[recorder])
    sizes = [(name, epoch) for name, epoch, _ in recorder.scalars]
    assert sizes == [("QueueInput/queue_size", 1), ("QueueInput/queue_size", 2)]
    starving = [m for m in log_warnings if "the queue was empty" in m]
    assert len(starving) == 1
    assert re.match(r"QueueInput: the queue was empty before (67|100)% of the steps of epoch 1; "
                    r"training waited \d+\.\d\d s for data\.", starving[0])
    assert "'A starving loader' in docs/data.md" in starving[0]


@pytest.mark.slow
def test_a_fast_loader_keeps_the_queue_filled(log_warnings):
    recorder = Recorder()
    slow_step = OnStep(lambda self: time.sleep(0.05))
    train_linear([slow_step], data=tfloop.QueueInput(data(48)), max_epoch=2, monitors=[recorder])
    sizes = [value for name, epoch, value in recorder.scalars if epoch == 2]
    assert sizes[0] > 5
    assert not [m for m in log_warnings if "the queue was empty" in m]


def test_the_loader_thread_enqueues_without_session_run(monkeypatch):
    # Session.run's Python work per datapoint holds the GIL that the step and the loader need.
    callers = []
    run = tfv1.Session.run

    def recording_run(self, *args, **kwargs):
        callers.append(threading.current_thread().name)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(tfv1.Session, "run", recording_run)
    fed, queued = StepValues("cost", float), StepValues("cost", float)
    train_linear([fed], data=tfloop.FeedInput(data()), max_epoch=2)
    train_linear([queued], data=tfloop.QueueInput(data()), max_epoch=2)
    assert queued.values == fed.values
    assert callers and "QueueInput loader" not in callers


def test_steps_per_run_dequeues_every_step_of_the_call_in_order():
    x, y = make_regression_data(24)
    finals = []

    def final():
        return tfloop.CallbackFactory(after_train=lambda self: finals.append(self.trainer.sess.run(
            next(v for v in tfv1.global_variables() if v.op.name == "w"))))
    one, three = tfloop.SimpleTrainer(), tfloop.SimpleTrainer(steps_per_run=3)
    train_linear([final()], data=tfloop.QueueInput(batches(x, y, 4)), max_epoch=2, trainer=one)
    train_linear([final()], data=tfloop.QueueInput(batches(x, y, 4)), max_epoch=2, trainer=three)
    assert three.global_step == one.global_step == 12
    np.testing.assert_allclose(finals[0], finals[1], rtol=1e-6)
    assert np.abs(finals[0]).sum() > 0
    with pytest.raises(ValueError, match=r"steps_per_run=3 needs an input source that makes a new "
                                         r"batch inside the graph .*QueueInput feeds x:0, y:0"):
        train_linear([], data=tfloop.QueueInput(batches(x, y, 4), queue=50), max_epoch=2,
                     trainer=tfloop.SimpleTrainer(steps_per_run=3))


def test_batch_queue_input_batches_single_examples_like_feed_input():
    x, y = make_regression_data(12)
    fed, queued = StepValues("cost", float), StepValues("cost", float)
    train_linear([fed], data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=2)
    source = tfloop.BatchQueueInput([(x[i], y[i]) for i in range(12)], 4)
    assert source.size() == 3
    train_linear([queued], data=source, max_epoch=2)
    np.testing.assert_allclose(queued.values, fed.values, rtol=1e-6)


def test_batch_queue_input_needs_defined_shapes_and_a_positive_batch_size():
    with pytest.raises(ValueError, match="batch_size must be an int >= 1, got 0"):
        tfloop.BatchQueueInput([], 0)

    class Unknown(LinearModel):
        def inputs(self):
            return [tf.TensorSpec([None, None], tf.float32, "x"),
                    tf.TensorSpec([None], tf.float32, "y")]
    with pytest.raises(ValueError, match=r"fully defined apart from the batch dimension; input "
                                         r"x: float32 \(None, None\) is not"):
        train_linear([], data=tfloop.BatchQueueInput([], 4), model=Unknown(), steps_per_epoch=1)


def test_a_queue_of_ones_own_built_by_a_function_and_bad_queues():
    made = []

    def make_queue():
        made.append(tfv1.FIFOQueue(2, [tf.float32, tf.float32], name="small"))
        return made[-1]
    trainer = train_linear([], data=tfloop.QueueInput(data(), queue=make_queue))
    assert trainer.input_source.queue is made[0] and trainer.global_step == 6
    with pytest.raises(ValueError, match=r"has dtypes \['float32', 'int32'\], but inputs\(\) needs "
                                         r"\['float32', 'float32'\]"):
        train_linear([], data=tfloop.QueueInput(
            data(), queue=lambda: tfv1.FIFOQueue(2, [tf.float32, tf.int32])))
    with tf.Graph().as_default():
        foreign = tfv1.FIFOQueue(2, [tf.float32, tf.float32])
    with pytest.raises(ValueError, match="was built outside tfloop's training graph"):
        train_linear([], data=tfloop.QueueInput(data(), queue=foreign))
    with pytest.raises(TypeError, match=r"QueueInput's queue must be a buffer size \(int\), a "
                                        r"tf.queue.QueueBase or a function that builds one, got "
                                        r"'big'"):
        tfloop.QueueInput(data(), queue="big")
    with pytest.raises(ValueError, match="QueueInput's buffer size must be >= 1, got 0"):
        tfloop.QueueInput(data(), queue=0)
    with pytest.raises(TypeError, match="QueueInput's queue function returned 3"):
        train_linear([], data=tfloop.QueueInput(data(), queue=lambda: 3))
    with pytest.raises(TypeError, match="BatchQueueInput needs a TensorFlow queue"):
        tfloop.BatchQueueInput(data(), 4, queue=100)
    with pytest.raises(TypeError, match="QueueInput needs an iterable of datapoints"):
        tfloop.QueueInput(5)


# ---- exact resume --------------------------------------------------------------------------------
@pytest.mark.parametrize("length, queue", [
    (True, None), pytest.param(False, 50, marks=pytest.mark.slow), (True, "tf")])
def test_resume_mid_epoch_continues_at_the_next_datapoint_bit_exactly(tmp_path, length, queue):
    # 5 batches but 3 steps per epoch: passes of the data and epochs do not line up.
    x, y = make_regression_data(20)
    items = batches(x, y, 4)

    def make_source():
        return tfloop.QueueInput(Flow(items, length=length),
                                 tf_queue() if queue == "tf" else queue)
    _, reference = train_resumable(str(tmp_path / "reference"), make_source())
    logdir = str(tmp_path / "log")
    _, first = train_resumable(logdir, make_source(), stop_at=7)
    with open(os.path.join(logdir, "model-7.resume.json")) as f:
        state = json.load(f)
    assert state["callbacks"]["_QueueFeeder#0"] == {"pass": 1, "index": 2, "consumed": 7}
    config, second = train_resumable(logdir, make_source())
    assert (config.starting_epoch, config.starting_local_step) == (3, 1)
    assert sorted(first) == list(range(1, 8)) and sorted(second) == [8, 9]
    assert {**first, **second} == reference


@pytest.mark.slow
@pytest.mark.parametrize("queue", [None, 50])
def test_resume_within_a_pass_of_data_without_length_is_bit_exact(tmp_path, queue):
    x, y = make_regression_data(20)
    items = batches(x, y, 4)        # passes of 5 batches: epochs of 5 steps

    def source():
        return tfloop.QueueInput(Flow(items, length=False), queue)
    _, reference = train_resumable(str(tmp_path / "reference"), source(), steps_per_epoch=None)
    logdir = str(tmp_path / "log")
    _, first = train_resumable(logdir, source(), stop_at=7, steps_per_epoch=None)
    with open(os.path.join(logdir, "model-7.resume.json")) as f:
        state = json.load(f)
    assert state["callbacks"]["_QueueFeeder#0"] == {"pass": 1, "index": 2, "consumed": 7}
    assert (state["steps_per_epoch"], state["pass_steps"], state["pass_ended"]) == \
        (None, 5, False)
    config, second = train_resumable(logdir, source(), steps_per_epoch=None)
    assert (config.starting_epoch, config.starting_local_step) == (2, 2)
    assert sorted(first) == list(range(1, 8)) and sorted(second) == list(range(8, 16))
    assert {**first, **second} == reference


def test_batch_queue_input_of_unknown_length_takes_whole_batches_of_each_pass():
    x, y = make_regression_data(10)
    examples = Flow([(x[i], y[i]) for i in range(10)], length=False)
    fed = StepValues("y", lambda y: np.asarray(y).tolist())
    trainer = train_linear([fed], data=tfloop.BatchQueueInput(examples, 4), max_epoch=2)
    assert trainer.global_step == 4 and trainer.expected_steps_per_epoch == 2
    assert fed.values == [y[0:4].tolist(), y[4:8].tolist()] * 2   # 2 examples left out a pass


# ---- tfloop.dataflow -----------------------------------------------------------------------------
def test_a_batched_dataflow_trains_like_the_same_batches_fed():
    from tfloop.dataflow import BatchData, DataFromList
    x, y = make_regression_data(12)
    fed, queued = StepValues("cost", float), StepValues("cost", float)
    train_linear([fed], data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=2)
    df = BatchData(DataFromList([[x[i], y[i]] for i in range(12)], shuffle=False), 4)
    train_linear([queued], data=df, max_epoch=2)
    np.testing.assert_allclose(queued.values, fed.values, rtol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("source", [tfloop.QueueInput, tfloop.FeedInput])
def test_worker_processes_of_a_dataflow_end_with_training(source):
    pytest.importorskip("zmq")
    import multiprocessing

    from tfloop.dataflow import DataFromList, MultiProcessRunnerZMQ
    df = MultiProcessRunnerZMQ(DataFromList(data(), shuffle=False), num_proc=2)
    trainer = train_linear([], data=source(df), max_epoch=2)
    assert trainer.global_step == 6
    assert multiprocessing.active_children() == []


class TowerInputs(tfloop.Callback):
    """The ``x`` batch of every training tower at every step."""

    _chief_only = False

    def __init__(self):
        self.steps = []

    def _setup_graph(self):
        self._inputs = [tower.inputs[0] for tower in self.trainer.towers.training()]

    def _before_run(self, ctx):
        return self._inputs

    def _after_run(self, ctx, values):
        self.steps.append(sorted((np.asarray(v) for v in values.results), key=lambda a: a[0, 0]))


@pytest.mark.parametrize("queue", [None, 50])
def test_each_training_tower_gets_a_datapoint_of_its_own(queue):
    x, y = make_regression_data(16)
    record = TowerInputs()
    data = tfloop.QueueInput(batches(x, y, 2), queue)
    train_linear([record], data=data, steps_per_epoch=4, max_epoch=1,
                 trainer=tfloop.SyncMultiGPUTrainerReplicated(2))
    assert len(record.steps) == 4
    for step, seen in enumerate(record.steps):
        want = sorted([x[4 * step:4 * step + 2], x[4 * step + 2:4 * step + 4]],
                      key=lambda a: a[0, 0])
        for got, expected in zip(seen, want):
            np.testing.assert_array_equal(got, expected)
