"""HorovodTrainer: Horovod's one process per device, on TensorFlow's collective all-reduce across
the processes of a TF_CONFIG cluster, against the same model trained in one process."""
import os

import numpy as np
import pytest
from distributed_support import (
    MODEL_VARIABLES,
    STEPS,
    launch,
    make_cluster,
    task_log,
    train_script,
)
from sockets_support import non_loopback_listeners

import tfloop
from tfloop.compat import tf
from tfloop.train.cluster import ClusterTask
from tfloop.train.horovod import _local_rank

RTOL, ATOL = 1e-5, 1e-6


def _check_trains_like(results, outdir, reference):
    for name, result in results.items():
        assert result["exitcode"] == 0 and result["ok"], (name, result, task_log(outdir, name))
    for name in ("worker0", "worker1"):
        for var in MODEL_VARIABLES:
            np.testing.assert_allclose(results[name]["values"][var], reference[var], rtol=RTOL,
                                       atol=ATOL, err_msg=f"{name} {var}")
    checkpoint = tf.train.latest_checkpoint(os.path.join(outdir, "train_log"))
    assert os.path.basename(checkpoint) == f"model-{STEPS}"


@pytest.mark.slow
def test_two_processes_average_their_gradients_as_one_process_does(tmp_path):
    reference = train_script(tfloop.SimpleTrainer(), save=False).values
    results = launch(make_cluster(workers=2), str(tmp_path), horovod_average=True)
    _check_trains_like(results, str(tmp_path), reference)
    assert "Horovod is not used; the 2 process(es) of the TF_CONFIG cluster" in \
        task_log(str(tmp_path), "worker0")


@pytest.mark.slow
def test_two_processes_that_sum_their_gradients_step_twice_as_far(tmp_path):
    # Each process's gradient is the mean over its half of the batch: their sum is twice the
    # whole batch's mean, which momentum SGD turns into the steps of twice the learning rate.
    reference = train_script(tfloop.SimpleTrainer(), save=False, optimizer="momentum:0.2").values
    results = launch(make_cluster(workers=2), str(tmp_path), horovod_average=False)
    _check_trains_like(results, str(tmp_path), reference)


class Listeners(tfloop.Callback):
    """The addresses other machines could reach this process at, during training."""

    def _before_train(self):
        self.during = non_loopback_listeners()


@pytest.mark.slow
@pytest.mark.parametrize("trainer_class", [tfloop.HorovodTrainer, tfloop.BytePSTrainer])
def test_alone_it_trains_as_one_process_and_listens_on_no_network(monkeypatch, trainer_class):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    before, listeners = non_loopback_listeners(), Listeners()
    trainer = trainer_class()
    values = train_script(trainer, save=False, callbacks=[listeners]).values
    assert listeners.during <= before and non_loopback_listeners() <= before
    assert trainer.server is None and trainer.task is None
    assert (trainer.rank, trainer.num_workers, trainer.local_rank, trainer.is_chief) == \
        (0, 1, 0, True)
    reference = train_script(tfloop.SimpleTrainer(), save=False).values
    for var in MODEL_VARIABLES:
        np.testing.assert_allclose(values[var], reference[var], rtol=RTOL, atol=ATOL)


def test_horovods_compression_is_refused_naming_the_fix():
    with pytest.raises(ValueError, match="compression='fp16' is Horovod's; .*leave "
                                         "compression=None"):
        tfloop.HorovodTrainer(compression="fp16")


@pytest.mark.parametrize("index,expected", [(0, 0), (1, 1), (2, 0), (3, 2)])
def test_the_local_rank_counts_the_workers_before_this_one_on_its_host(index, expected):
    cluster = {"worker": ["a:1", "a:2", "b:1", "a:3"]}
    assert _local_rank(ClusterTask(cluster, "worker", index)) == expected


def test_tensorpacks_names_are_the_same_classes():
    from tfloop.train import BytePSTrainer, HorovodTrainer
    assert tfloop.HorovodTrainer is HorovodTrainer
    assert issubclass(BytePSTrainer, HorovodTrainer)
    assert issubclass(HorovodTrainer, tfloop.DistributedTrainerReplicated)
