"""The GPU paths on a real card: ``python -m pytest -m gpu tests/gpu``.

Every test here is marked ``gpu`` and skipped where TensorFlow sees no GPU, so CI on CPUs stays
green. One card cannot prove cross-card NCCL transport: the replicated trainer and
``BatchNorm(sync_statistics='nccl')`` run over two logical GPUs carved out of the first card
(in a subprocess, as logical devices must be set before TensorFlow touches the GPU).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from precision_support import train_convnet
from support import LinearModel, batches, dataset_fn, make_regression_data

import tfloop
from tfloop.compat import tf, tfv1

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(
    not tf.config.list_physical_devices("GPU"), reason="no GPU visible to TensorFlow")]
X, Y = make_regression_data(24)


class FinalWeights(tfloop.Callback):
    def _setup_graph(self):
        self.var = [v for v in tfv1.global_variables() if v.op.name == "w"][0]

    def _after_train(self):
        self.value = self.trainer.sess.run(self.var)


def train_on(device, **kwargs):
    weights = FinalWeights()
    config = tfloop.TrainConfig(model=kwargs.pop("model", LinearModel()),
                                data=tfloop.DatasetInput(dataset_fn(X, Y, 4)),
                                callbacks=[weights, *kwargs.pop("callbacks", [])],
                                steps_per_epoch=6, max_epoch=2, **kwargs)
    tfloop.launch_train_with_config(config, tfloop.SyncMultiGPUTrainerReplicated([device]))
    return weights.value


def test_training_on_the_gpu_equals_the_cpu():
    np.testing.assert_allclose(train_on("/gpu:0"), train_on("/cpu:0"), rtol=1e-5, atol=1e-6)


def test_float16_rewrite_fires_on_the_gpu():
    probe = train_convnet(mixed_precision="float16")
    assert probe.reduced["float16"] > 0 and probe.loss_scale is not None
    assert tf.float16 not in probe.dtypes


def test_xla_clusters_on_the_gpu():
    assert train_convnet(xla=True).xla > 0


def test_staging_input_on_the_gpu_trains_and_resumes(logdir):
    x, y = make_regression_data(24)

    def train(max_epoch):
        config = tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=tfloop.StagingInput(tfloop.QueueInput(
                tfloop.DataFromList(batches(x, y, 4), shuffle=False))),
            callbacks=[tfloop.ModelSaver()], steps_per_epoch=6, max_epoch=max_epoch)
        trainer = tfloop.SimpleTrainer()
        tfloop.launch_train_with_config(config, trainer)
        return config, trainer

    train(1)
    config, trainer = train(2)
    assert config.resume_from is not None and trainer.loop.global_step == 12


def test_gpu_utilization_tracker_records_numbers(logdir):
    train_on("/gpu:0", callbacks=[tfloop.GPUUtilizationTracker()])
    with open(os.path.join(logdir, "stats.json")) as f:
        stats = json.load(f)
    values = [s[k] for s in stats for k in s if k.startswith("GPUUtil/")]
    assert values and all(0 <= v <= 100 for v in values)


def test_predictor_and_saved_model_on_the_gpu(tmp_path):
    from support import PredictLinearModel
    w = np.arange(3, dtype=np.float32).reshape(3, 1)
    config = tfloop.PredictConfig(model=PredictLinearModel(), session_init={"w": w},
                                  input_names=["x"], output_names=["pred"])
    pred, = tfloop.OfflinePredictor(config)(X)
    np.testing.assert_allclose(pred, X @ w[:, 0], rtol=1e-5)
    tfloop.ModelExporter(config).export_serving(str(tmp_path / "export"))
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    out = loaded.signatures["serving_default"](x=tf.constant(X))
    np.testing.assert_allclose(next(iter(out.values())).numpy(), X @ w[:, 0], rtol=1e-5)


REPLICATED_ON_LOGICAL_GPUS = """
import sys; sys.path[:0] = [{tests!r}]
import tensorflow as tf
gpu = tf.config.list_physical_devices("GPU")[0]
tf.config.set_logical_device_configuration(
    gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
import tfloop, precision_support as t
from tfloop.compat import tfv1

class BNNet(t.ConvNet):
    def build_graph(self, image, label):
        x = tfloop.Conv2D("conv", image, 4, 3)
        x = tf.nn.relu(tfloop.BatchNorm("bn", x, sync_statistics="nccl"))
        logits = tfloop.FullyConnected("fc", tf.reshape(x, [-1, 256]), 3)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

probe = t.train_convnet(tfloop.SyncMultiGPUTrainerReplicated(2, mode="nccl"), model=BNNet())
print("REPLICA_DIFFERENCE", probe.replica_difference)
"""


def test_replicated_nccl_and_sync_batch_norm_over_two_logical_gpus():
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = REPLICATED_ON_LOGICAL_GPUS.format(tests=tests)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600)
    lines = [x for x in out.stdout.splitlines() if x.startswith("REPLICA_DIFFERENCE")]
    assert lines, out.stderr[-3000:]
    assert float(lines[0].split()[1]) == 0.0
