"""FeedInput: tensorpack's signature (df, infinite), DataFlows, and exact resume."""
import json
import os

import numpy as np
import pytest
from resume_support import train_resumable
from support import Flow, StepValues, batches, make_regression_data, train_linear

import tfloop


def test_a_dataflow_is_reset_once_and_repeated():
    x, y = make_regression_data(12)
    flow = Flow(batches(x, y, 4))
    fed = StepValues("x", lambda x: float(x[0, 0]))
    trainer = train_linear([fed], data=tfloop.FeedInput(flow), max_epoch=3)
    assert trainer.global_step == 9 and flow.resets == 1 and flow.passes == 3
    assert fed.values == [float(x[i, 0]) for i in (0, 4, 8)] * 3


def test_a_dataflow_without_length_trains_one_pass_per_epoch():
    x, y = make_regression_data(12)
    fed = StepValues("x", lambda x: float(x[0, 0]))
    trainer = train_linear([fed], data=tfloop.FeedInput(Flow(batches(x, y, 4), length=False)),
                           max_epoch=2)
    assert trainer.global_step == 6 and trainer.expected_steps_per_epoch == 3
    assert fed.values == [float(x[i, 0]) for i in (0, 4, 8)] * 2


def test_each_tower_is_fed_a_datapoint_of_one_pass_and_a_short_rest_is_left_out():
    x, y = make_regression_data(20)
    towers = [StepValues(name, lambda x: float(x[0, 0])) for name in ("x", "tower1/x")]
    trainer = train_linear(towers, data=tfloop.FeedInput(Flow(batches(x, y, 4), length=False)),
                           max_epoch=2, trainer=tfloop.SyncMultiGPUTrainerReplicated(2))
    assert trainer.global_step == 4     # 5 batches a pass: 2 steps of 2, the 5th left out
    assert [v for pair in zip(*[t.values for t in towers]) for v in pair] == \
        [float(x[i, 0]) for i in (0, 4, 8, 12)] * 2


def test_finite_feed_input_of_unknown_length_needs_steps_per_epoch():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match="the input source FeedInput does not know its size"):
        train_linear([], data=tfloop.FeedInput(Flow(batches(x, y, 4), length=False),
                                               infinite=False))


def test_finite_feed_input_stops_training_when_the_data_ends():
    x, y = make_regression_data(12)
    fed = StepValues("x", lambda x: float(x[0, 0]))
    trainer = train_linear([fed], data=tfloop.FeedInput(batches(x, y, 4), infinite=False),
                           max_epoch=5)
    assert trainer.global_step == 3 and len(fed.values) == 3
    assert trainer.training_error is None


def test_feed_input_needs_an_iterable():
    with pytest.raises(TypeError, match="FeedInput needs an iterable of datapoints"):
        tfloop.FeedInput(3)


@pytest.mark.slow
def test_resume_mid_epoch_continues_at_the_next_datapoint_bit_exactly(tmp_path):
    x, y = make_regression_data(20)
    items = batches(x, y, 4)        # 5 batches, 3 steps per epoch
    _, reference = train_resumable(str(tmp_path / "reference"), tfloop.FeedInput(items))
    logdir = str(tmp_path / "log")
    _, first = train_resumable(logdir, tfloop.FeedInput(items), stop_at=4)
    with open(os.path.join(logdir, "model-4.resume.json")) as f:
        state = json.load(f)
    assert state["callbacks"]["_FeedNext#0"] == {"pass": 0, "index": 4}
    assert state["input_note"] is None and state["iterator"] is None
    _, second = train_resumable(logdir, tfloop.FeedInput(items))
    assert sorted(first) == [1, 2, 3, 4] and sorted(second) == [5, 6, 7, 8, 9]
    assert {**first, **second} == reference
    assert len(set(reference.values())) == 9
    assert not np.isnan(np.frombuffer(reference[9], np.float32)).any()


@pytest.mark.slow
def test_resume_within_a_pass_of_data_without_length_is_bit_exact(tmp_path):
    x, y = make_regression_data(20)
    items = batches(x, y, 4)        # passes of 5 batches: epochs of 5 steps

    def source():
        return tfloop.FeedInput(Flow(items, length=False))
    _, reference = train_resumable(str(tmp_path / "reference"), source(), steps_per_epoch=None)
    logdir = str(tmp_path / "log")
    _, first = train_resumable(logdir, source(), stop_at=7, steps_per_epoch=None)
    config, second = train_resumable(logdir, source(), steps_per_epoch=None)
    assert (config.starting_epoch, config.starting_local_step) == (2, 2)
    assert sorted(first) == list(range(1, 8)) and sorted(second) == list(range(8, 16))
    assert {**first, **second} == reference
