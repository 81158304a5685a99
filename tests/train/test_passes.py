"""Epochs that are passes over data of unknown length: each epoch ends where a pass over the data
does, as Keras ``fit`` ends it, on one device and several; what callbacks see at each step; the
progress bar; and the errors for data that is empty, repeats forever or needs a known length."""
import io
import logging
import os
import re

import numpy as np
import pytest
from keras_support import keras_batches_per_epoch
from support import (
    LRModel,
    LRRecorder,
    RecordingCallback,
    StepValues,
    make_regression_data,
    train_linear,
)

import tfloop
from tfloop.compat import tf


def regression(n):
    x, y = make_regression_data(n)
    return tf.data.Dataset.from_tensor_slices((x, y))


def keep_all(x, y):
    return y > -1e9


def positive_batch(x, y):
    return tf.reduce_sum(y) > 0


class EpochSteps(tfloop.Callback):
    """The steps of each epoch, ``trainer.expected_steps_per_epoch`` at its start, and the steps
    at which ``trainer.is_last_step`` was true in ``after_run`` and in ``trigger_step``."""

    _chief_only = False

    def __init__(self):
        self.steps, self.expected, self.last_in_after_run, self.last_in_trigger = [], [], [], []

    def _before_epoch(self):
        self.steps.append(0)
        self.expected.append(self.trainer.expected_steps_per_epoch)

    def _after_run(self, ctx, values):
        if self.trainer.is_last_step:
            self.last_in_after_run.append(self.global_step)

    def _trigger_step(self):
        self.steps[-1] += 1
        if self.trainer.is_last_step:
            self.last_in_trigger.append(self.global_step)


@pytest.mark.slow
@pytest.mark.parametrize("form", ["eager", "function", "DatasetInput"])
def test_each_epoch_is_one_pass_over_a_filtered_dataset_as_in_keras(form):
    def make():
        return regression(64).filter(keep_all).batch(8)
    data = {"eager": make(), "function": make, "DatasetInput": tfloop.DatasetInput(make)}[form]
    epochs = EpochSteps()
    trainer = train_linear([epochs], data=data, max_epoch=3)
    assert epochs.steps == keras_batches_per_epoch(make(), 3) == [8, 8, 8]
    assert epochs.expected == [None, 8, 8] and trainer.expected_steps_per_epoch == 8
    assert epochs.last_in_after_run == epochs.last_in_trigger == [8, 16, 24]
    assert trainer.epochs_are_passes and trainer.steps_per_epoch == 8


@pytest.mark.slow
def test_passes_of_different_lengths_are_epochs_of_those_lengths_as_in_keras():
    def make():
        return regression(64).shuffle(64, seed=1).batch(4).filter(positive_batch)
    epochs = EpochSteps()
    train_linear([epochs], data=make(), max_epoch=4)
    assert epochs.steps == keras_batches_per_epoch(make(), 4)
    assert len(set(epochs.steps)) > 1
    assert epochs.expected == [None] + epochs.steps[:-1]


def test_the_hooks_see_whole_steps_and_the_epoch_ends_after_the_pass_last_batch():
    log = []
    train_linear([RecordingCallback("cb", log, fetches=["y:0"])],
                 data=lambda: regression(12).filter(keep_all).batch(6), max_epoch=2)
    _, y = make_regression_data(12)
    step = [("cb", "before_run"), ("cb", "after_run"), ("cb", "trigger_step")]
    hooks = [entry[:2] for entry in log]
    assert hooks == [("cb", "setup_graph"), ("cb", "before_train"), ("cb", "before_epoch")] + \
        step * 2 + [("cb", "after_epoch"), ("cb", "trigger"), ("cb", "before_epoch")] + \
        step * 2 + [("cb", "after_epoch"), ("cb", "trigger"), ("cb", "after_train")]
    fetched = [entry[5][0] for entry in log if entry[1] == "after_run"]
    np.testing.assert_allclose(fetched, [y[:6], y[6:]] * 2, rtol=1e-6)
    positions = [entry[2:5] for entry in log if entry[1] == "trigger_step"]
    assert positions == [(1, 1, 0), (1, 2, 1), (2, 3, 0), (2, 4, 1)]


@pytest.mark.slow
def test_the_progress_bar_counts_the_first_pass_and_says_when_a_pass_differs():
    out = io.StringIO()
    train_linear([], data=regression(64).shuffle(64, seed=1).batch(4).filter(positive_batch),
                 extra_callbacks=[tfloop.ProgressBar(file=out)], max_epoch=4)
    lines = out.getvalue().splitlines()
    steps = keras_batches_per_epoch(
        regression(64).shuffle(64, seed=1).batch(4).filter(positive_batch), 4)
    assert lines[0].startswith(f"Epoch 1: {steps[0]}it [")
    for epoch in (2, 3, 4):
        now, before = steps[epoch - 1], steps[epoch - 2]
        head = f"Epoch {epoch}: 100%|" if now == before else \
            f"Epoch {epoch} (a pass of {now} steps; the pass before had {before}): 100%|"
        assert lines[epoch - 1].startswith(head) and f"| {now}/{now} [" in lines[epoch - 1]


def test_steps_per_epoch_fixes_the_epoch_and_the_data_is_repeated_without_repeat():
    epochs = EpochSteps()
    trainer = train_linear([epochs], data=regression(64).filter(keep_all).batch(8),
                           steps_per_epoch=5, max_epoch=3)
    assert epochs.steps == [5, 5, 5] and trainer.global_step == 15
    assert not trainer.epochs_are_passes and epochs.last_in_trigger == [5, 10, 15]


@pytest.mark.parametrize("trainer", [lambda: tfloop.SyncMultiGPUTrainerReplicated(2),
                                     lambda: tfloop.SyncMultiGPUTrainerParameterServer(2)])
def test_every_tower_ends_the_epoch_at_the_same_step_and_a_pass_is_cut_to_whole_steps(trainer):
    epochs = EpochSteps()
    batches = StepValues("tower1/y", lambda y: float(np.asarray(y)[0]))
    # 7 batches a pass: 3 steps of two towers, the 7th batch left out.
    trained = train_linear([epochs, batches], data=regression(28).filter(keep_all).batch(4),
                           max_epoch=3, trainer=trainer())
    assert epochs.steps == [3, 3, 3] and trained.global_step == 9
    assert epochs.expected == [None, 3, 3]
    _, y = make_regression_data(28)
    first_of_batch = set(y[0:24:4].tolist())
    assert set(batches.values) <= first_of_batch   # no tower took the 7th batch


def test_a_stopped_epoch_leaves_the_rest_of_its_pass_to_the_next_epoch():
    class StopAfterTwo(tfloop.Callback):
        def __init__(self):
            self.first_steps = []

        def _before_epoch(self):
            self.first_steps.append(self.local_step + 1)

        def _trigger_step(self):
            if self.epoch_num == 1 and self.local_step == 1:
                raise tfloop.StopEpoch("two steps are enough")
    stop, epochs = StopAfterTwo(), EpochSteps()
    trainer = train_linear([stop, epochs], data=regression(40).filter(keep_all).batch(8),
                           max_epoch=3)
    assert epochs.steps == [2, 3, 5] and epochs.expected == [None, None, 5]
    assert stop.first_steps == [0, 2, 0] and trainer.global_step == 10


def test_reading_steps_per_epoch_before_the_first_pass_ended_names_the_callback():
    class NeedsLength(tfloop.Callback):
        def _before_train(self):
            self.steps = self.trainer.steps_per_epoch

    with pytest.raises(ValueError, match="^steps_per_epoch is not known yet") as info:
        train_linear([NeedsLength()], data=regression(12).filter(keep_all).batch(4))
    assert "(raised in callback NeedsLength.before_train)" in info.value.__notes__


class Triggers(tfloop.Callback):
    """The global steps at which it was triggered."""

    def __init__(self):
        self.at = []

    def _trigger(self):
        self.at.append(self.global_step)


def test_step_and_epoch_periods_and_step_schedules_need_no_epoch_length():
    every_two_steps, every_two_epochs = Triggers(), Triggers()
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.2), (4, 0.1), (7, 0.01)],
                                              step_based=True)
    recorder = LRRecorder()
    train_linear([tfloop.PeriodicTrigger(every_two_steps, every_k_steps=2),
                  tfloop.PeriodicTrigger(every_two_epochs, every_k_epochs=2), setter, recorder],
                 data=regression(12).filter(keep_all).batch(4), max_epoch=3, model=LRModel())
    assert every_two_steps.at == [2, 4, 6, 8]            # across the ends of passes of 3 steps
    assert every_two_epochs.at == [6]
    assert recorder.lrs == pytest.approx([0.2] * 4 + [0.1] * 3 + [0.01] * 2)


def test_the_start_logs_that_each_epoch_is_one_pass_over_the_named_pipeline(caplog):
    caplog.set_level(logging.INFO)
    train_linear([], data=regression(12).filter(keep_all).batch(4), max_epoch=1)
    assert "The input DatasetInput (its pipeline: from_tensor_slices > filter > batch) does not " \
        "know its length: each epoch is one pass over it" in caplog.text


def test_steps_per_run_needs_a_known_epoch_length():
    with pytest.raises(ValueError, match=r"^steps_per_run=2 needs epochs of a known length"):
        train_linear([], data=regression(12).filter(keep_all).batch(4), steps_per_run=2)
    trainer = train_linear([], data=regression(12).filter(keep_all).batch(4), steps_per_run=2,
                           steps_per_epoch=4, max_epoch=1)
    assert trainer.global_step == 4


def test_an_empty_pipeline_is_named_at_the_first_step_of_its_epoch():
    with pytest.raises(ValueError) as info:
        train_linear([], data=lambda: regression(12).filter(lambda x, y: y > 1e9).batch(4))
    assert str(info.value) == (
        "The input DatasetInput (its pipeline: from_tensor_slices > filter > batch) yielded no "
        "batch in epoch 1: its data is empty. Check what builds it (a filter that drops "
        "everything, an empty file list).")


def test_data_shorter_than_one_step_of_every_tower_is_empty():
    with pytest.raises(ValueError, match=r"yielded no batch in epoch 1: its data is empty; each "
                                         r"step takes 2 batches, one per tower, so a pass needs "
                                         r"at least 2\."):
        train_linear([], data=regression(4).filter(keep_all).batch(4),
                     trainer=tfloop.SyncMultiGPUTrainerReplicated(2))


def write_records(directory, parts=3, n=24):
    """``n`` datapoints of :func:`make_regression_data` as tf.train.Example records in ``parts``
    TFRecord files; returns the files' pattern."""
    x, y = make_regression_data(n)
    for part in range(parts):
        path = os.path.join(directory, f"train-{part:05d}-of-{parts:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for i in range(part, n, parts):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x[i])),
                    "y": tf.train.Feature(float_list=tf.train.FloatList(value=[y[i]]))}))
                writer.write(example.SerializeToString())
    return os.path.join(directory, "train-*.tfrecord")


FEATURES = {"x": tf.io.FixedLenFeature([3], tf.float32), "y": tf.io.FixedLenFeature([], tf.float32)}


def parse(record):
    example = tf.io.parse_single_example(record, FEATURES)
    return example["x"], example["y"]


@pytest.mark.slow
@pytest.mark.parametrize("form", ["file list", "list_files + interleave", "filter"])
def test_tfrecord_files_as_tensorflow_reads_them_train_one_pass_per_epoch_as_in_keras(
        tmp_path, form):
    pattern = write_records(str(tmp_path))

    def make():
        if form == "list_files + interleave":
            files = tf.data.Dataset.list_files(pattern, shuffle=True, seed=3)
            records = files.interleave(tf.data.TFRecordDataset, cycle_length=2,
                                       num_parallel_calls=tf.data.AUTOTUNE)
        else:
            records = tf.data.TFRecordDataset(sorted(tf.io.gfile.glob(pattern)))
        ds = records.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
        if form == "filter":
            ds = ds.filter(lambda x, y: y > 0)
        return ds.batch(4).prefetch(tf.data.AUTOTUNE)
    epochs = EpochSteps()
    train_linear([epochs], data=make(), max_epoch=2)
    assert epochs.steps == keras_batches_per_epoch(make(), 2)
    positives = int((make_regression_data(24)[1] > 0).sum())
    assert epochs.steps == ([-(-positives // 4)] * 2 if form == "filter" else [6, 6])


class ShorterShardTrainer(tfloop.SimpleTrainer):
    """A worker of a cluster whose other worker's passes are 3 steps: every epoch ends after
    3 steps, the other worker's pass end, and this one drops the rest of its own pass."""

    def pass_end_tensors(self, flags):
        own = tf.reduce_any(tf.stack(flags))
        with tf.control_dependencies([self.train_op]):
            step = tf.compat.v1.train.get_global_step().read_value()
        return tf.logical_or(own, tf.equal(step % 3, 0)), own


@pytest.mark.parametrize("source", ["dataset", "queue", "buffer", "feed"])
def test_a_worker_whose_pass_is_not_over_when_the_epoch_ends_drops_the_rest_of_it(source):
    from support import Flow, batches
    x, y = make_regression_data(20)                  # passes of 5 batches
    items = batches(x, y, 4)
    data = {"dataset": lambda: tfloop.DatasetInput(
                lambda: regression(20).filter(keep_all).batch(4)),
            "queue": lambda: tfloop.QueueInput(Flow(items, length=False)),
            "buffer": lambda: tfloop.QueueInput(Flow(items, length=False), queue=2),
            "feed": lambda: tfloop.FeedInput(Flow(items, length=False))}[source]()
    epochs, firsts = EpochSteps(), StepValues("x", lambda x: float(np.asarray(x)[0, 0]))
    trainer = train_linear([epochs, firsts], data=data, max_epoch=3,
                           trainer=ShorterShardTrainer())
    assert epochs.steps == [3, 3, 3] and trainer.global_step == 9
    assert firsts.values == [float(x[i, 0]) for i in (0, 4, 8)] * 3   # each epoch a new pass


def test_the_advice_for_a_tfrecord_path_trains_as_written_one_pass_per_epoch_as_in_keras(
        tmp_path):
    write_records(str(tmp_path), parts=1, n=40)
    path = str(tmp_path / "train-00000-of-00001.tfrecord")
    with pytest.raises(TypeError) as info:
        tfloop.as_input_source(path)
    advised = re.search(r"data=(lambda: .*\.batch\(32\)), where parse_example", str(info.value))
    data = eval(advised.group(1), {"tf": tf, "parse_example": parse})
    epochs = EpochSteps()
    train_linear([epochs], data=data, max_epoch=2)
    assert epochs.steps == keras_batches_per_epoch(data(), 2) == [2, 2]   # 32 + 8 records
