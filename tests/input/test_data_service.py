"""DataServiceInput on a tf.data service cluster of a dispatcher and two workers on loopback."""
import faulthandler

import numpy as np
import pytest
from support import StepValues, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf

HANG_LIMIT_S = 240


@pytest.fixture(autouse=True)
def _bounded():
    """A hung gRPC call must not hang the test run: dump the stacks and exit instead."""
    faulthandler.dump_traceback_later(HANG_LIMIT_S, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def cluster():
    with tfloop.DataServiceCluster(num_workers=2) as running:
        yield running


def rows(batches):
    return sorted(tuple(row) for batch in batches for row in batch.tolist())


def test_parallel_epochs_every_worker_runs_the_whole_dataset(cluster):
    x, y = make_regression_data(12)
    seen = StepValues("x")
    data = tfloop.DataServiceInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4), cluster, repeat=False)
    assert cluster.target.startswith("grpc://localhost:")
    trainer = train_linear([seen], data=data, steps_per_epoch=6, max_epoch=1)
    assert trainer.global_step == 6 and data.size() == 3
    # Two workers, one pass each: every example twice.
    assert rows(seen.values) == sorted(rows([x]) * 2)


def test_distributed_epoch_splits_one_pass_between_the_workers(cluster):
    x, y = make_regression_data(12)
    seen = StepValues("x")
    data = tfloop.DataServiceInput(tf.data.Dataset.from_tensor_slices((x, y)).batch(1),
                                   cluster.target, processing_mode="distributed_epoch",
                                   repeat=False)
    train_linear([seen], data=data, max_epoch=1)
    assert len(seen.values) == 12
    assert rows(seen.values) == rows([x])


def test_training_on_the_service_learns(cluster):
    x, y = make_regression_data(48)
    log = StepValues("cost", float)
    data = tfloop.DataServiceInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).shuffle(48, seed=1).batch(8),
        cluster.dispatcher_address)
    train_linear([log], data=data, max_epoch=4)
    costs = log.values
    assert len(costs) == 24 and np.mean(costs[-4:]) < np.mean(costs[:4]) / 3


def test_bad_arguments():
    with pytest.raises(ValueError, match="processing_mode must be one of parallel_epochs, "
                                         "distributed_epoch; got 'off'"):
        tfloop.DataServiceInput(lambda: None, "grpc://localhost:1", processing_mode="off")
    with pytest.raises(TypeError, match="service must be the dispatcher's address"):
        tfloop.DataServiceInput(lambda: None, 5050)
    with pytest.raises(ValueError, match="num_workers must be an int >= 1, got 0"):
        tfloop.DataServiceCluster(num_workers=0)


@pytest.mark.slow
def test_a_cluster_of_processes_serves_and_its_processes_end():
    x, y = make_regression_data(12)
    seen = StepValues("x")
    with tfloop.DataServiceCluster(num_workers=2, processes=True) as procs:
        children = list(procs._procs)
        assert len(children) == 3
        data = tfloop.DataServiceInput(
            lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4), procs, repeat=False)
        train_linear([seen], data=data, steps_per_epoch=6, max_epoch=1)
    assert rows(seen.values) == sorted(rows([x]) * 2)
    assert all(child.poll() is not None for child in children)


class EpochRows(tfloop.Callback):
    """The rows of ``x`` each epoch trained on, one list per epoch."""

    def _setup_graph(self):
        self.x = self.get_tensors_maybe_in_tower(["x"])[0]
        self.epochs = []

    def _before_epoch(self):
        self.epochs.append([])

    def _before_run(self, ctx):
        return self.x

    def _after_run(self, ctx, values):
        self.epochs[-1].append(values.results)


def filtered(n=28, batch=4):
    """A pipeline of unknown length: n examples kept by a filter, in batches."""
    x, y = make_regression_data(n)
    return tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: b > -1e9).batch(batch)


@pytest.mark.slow
def test_without_steps_per_epoch_each_epoch_is_one_job_of_the_service_as_in_keras(cluster):
    from keras_support import keras_batches_per_epoch
    x, _ = make_regression_data(28)
    seen = EpochRows()
    train_linear([seen], data=tfloop.DataServiceInput(filtered, cluster), max_epoch=2)
    by_hand = filtered().apply(tf.data.experimental.service.distribute("parallel_epochs",
                                                                      cluster.target))
    assert [len(batches) for batches in seen.epochs] == keras_batches_per_epoch(by_hand, 2) == \
        [14, 14]                       # two workers, each a whole pass of 7 batches
    assert all(rows(batches) == sorted(rows([x]) * 2) for batches in seen.epochs)


@pytest.mark.slow
def test_distribute_applied_by_hand_trains_one_job_per_epoch(cluster):
    x, _ = make_regression_data(28)
    seen = EpochRows()
    by_hand = filtered().apply(tf.data.experimental.service.distribute(
        "distributed_epoch", cluster.target))
    trainer = train_linear([seen], data=by_hand, max_epoch=3)
    assert trainer.epochs_are_passes and len(seen.epochs) == 3
    # The workers split each job's examples between them: every example once an epoch.
    assert all(rows(batches) == rows([x]) for batches in seen.epochs)


def test_distribute_applied_by_hand_to_data_that_repeats_forever_needs_steps_per_epoch(cluster):
    forever = filtered().repeat().apply(tf.data.experimental.service.distribute(
        "parallel_epochs", cluster.target))
    with pytest.raises(ValueError, match=r"^The input DatasetInput repeats forever \(its pipeline: "
                                         r"distribute\), .*set the epoch's length with "
                                         r"steps_per_epoch=N, or remove the \.repeat\(\)"):
        train_linear([], data=forever)
    assert train_linear([], data=forever, steps_per_epoch=3, max_epoch=1).global_step == 3
