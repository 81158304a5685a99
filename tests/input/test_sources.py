"""Each input source trains the model; FeedInput and DatasetInput agree on the same data."""
import numpy as np
import pytest
from support import LinearModel, batches, dataset_fn, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf


class CostLog(tfloop.Callback):
    def __init__(self):
        self.costs = []
        self.weights = None

    def _setup_graph(self):
        self.cost, self.w = self.get_tensors_maybe_in_tower(["cost", "w:0"])

    def _before_run(self, ctx):
        return [self.cost, self.w]

    def _after_run(self, ctx, values):
        self.costs.append(float(values.results[0]))
        self.weights = values.results[1]


def test_feed_input_and_dataset_input_give_the_same_training():
    x, y = make_regression_data(12)
    feed_log, ds_log = CostLog(), CostLog()
    train_linear([feed_log], data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=3)
    train_linear([ds_log], data=tfloop.DatasetInput(dataset_fn(x, y, 4)), max_epoch=3)
    assert len(feed_log.costs) == 9
    np.testing.assert_allclose(feed_log.costs, ds_log.costs, rtol=1e-6)
    assert np.mean(feed_log.costs[-3:]) < np.mean(feed_log.costs[:3]) / 3


def test_a_dataset_function_as_data_means_dataset_input_and_its_size_is_one_epoch():
    x, y = make_regression_data(12)
    trainer = train_linear([], data=dataset_fn(x, y, 4), max_epoch=2)
    assert isinstance(trainer.input_source, tfloop.DatasetInput)
    assert trainer.global_step == 6


def test_dataset_of_dicts_keyed_by_input_name():
    x, y = make_regression_data(12)
    log = CostLog()
    train_linear([log], data=tfloop.DatasetInput(
        lambda: tf.data.Dataset.from_tensor_slices({"y": y, "x": x}).batch(4)), max_epoch=1)
    assert len(log.costs) == 3


def test_feed_input_of_dicts_and_a_generator_with_steps_per_epoch():
    x, y = make_regression_data(12)

    def forever():
        while True:
            for bx, by in batches(x, y, 4):
                yield {"x": bx, "y": by}

    log = CostLog()
    train_linear([log], data=tfloop.FeedInput(forever()), steps_per_epoch=5, max_epoch=2)
    assert len(log.costs) == 10


def test_infinite_dataset_needs_steps_per_epoch():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match=r"^The input DatasetInput repeats forever \(its "
                       r"pipeline: from_tensor_slices > batch > repeat\), so an epoch cannot be "
                       r"one pass over it: set the epoch's length with steps_per_epoch=N"):
        train_linear([], data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat())


def test_dummy_constant_input_trains_on_a_fixed_batch():
    log = CostLog()
    train_linear([log], data=tfloop.DummyConstantInput([[8, 3], [8]]), steps_per_epoch=20,
                 max_epoch=1)
    assert log.costs[-1] < log.costs[0]


def test_dummy_constant_input_needs_full_shapes():
    with pytest.raises(ValueError, match="needs a full shape"):
        train_linear([], data=tfloop.DummyConstantInput(), steps_per_epoch=1)


def test_dataset_component_mismatch_names_the_input():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match=r"does not match input x: float32 \(None, 3\)"):
        train_linear([], data=lambda: tf.data.Dataset.from_tensor_slices(
            (x[:, :2], y)).batch(4))
    with pytest.raises(ValueError, match="have 1 components but inputs\\(\\) declares 2"):
        train_linear([], data=lambda: tf.data.Dataset.from_tensor_slices(x).batch(4))
    with pytest.raises(ValueError, match=r"input y: float32 \(None,\) cannot take"):
        train_linear([], data=lambda: tf.data.Dataset.from_tensor_slices(
            (x, y.astype(str))).batch(4))


def test_feed_datapoint_shape_mismatch_names_the_input():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match=r"FeedInput datapoint 0: got shape \(4, 2\) for input x"):
        train_linear([], data=tfloop.FeedInput([(x[:4, :2], y[:4])]), max_epoch=1)
    with pytest.raises(ValueError, match="must be a list of 2 components"):
        train_linear([], data=tfloop.FeedInput([(x[:4],)]), max_epoch=1)
    with pytest.raises(ValueError,
                       match=r"is a dict with keys \['x'\] but inputs\(\) needs \['y'\]"):
        train_linear([], data=tfloop.FeedInput([{"x": x[:4]}]), max_epoch=1)


def test_one_shot_generator_that_runs_out_gets_a_clear_error():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match="ran out after 3 datapoints"):
        train_linear([], data=tfloop.FeedInput(iter(batches(x, y, 4))), steps_per_epoch=3,
                     max_epoch=2)


def test_input_source_serves_one_trainer():
    x, y = make_regression_data(12)
    source = tfloop.FeedInput(batches(x, y, 4))
    train_linear([], data=source, max_epoch=1)
    with pytest.raises(RuntimeError, match="already set up"):
        train_linear([], data=source, max_epoch=1)


def test_no_op_trainer_runs_only_callbacks():
    x, y = make_regression_data(12)
    log = CostLog()
    train_linear([log], trainer=tfloop.NoOpTrainer(), model=LinearModel(), max_epoch=2)
    assert len(log.costs) == 6
    assert len(set(log.costs)) > 1          # the data changes ...
    np.testing.assert_array_equal(log.weights, np.zeros((3, 1)))   # ... the weights do not
