"""Small projects written as tensorpack 0.9 users wrote them, run from their own entry point with
only their imports changed (``change_imports``, as ``docs/migrating.md`` says), on synthetic data
for a few steps, on the CPU.

``segmentation.py``: placeholder ``inputs()``, a config file's strings for the schedule's epochs
and ``max_epoch``, ``steps_per_epoch`` from a division, an int32 label map through augmentors,
``PrefetchDataZMQ(hwm=0)``, ``add_tensor_summary(['scalar'])``, two ``ModelSaver``s in the log
directory, ``SyncMultiGPUTrainerReplicated(gpus, mode='nccl')`` on a machine without GPUs, then
``PredictConfig`` + ``OfflinePredictor`` and ``ModelExporter.export_compact``.

``adversarial.py``: placeholder ``inputs()`` and a ``HorovodTrainer`` set up by hand
(``trainer.setup_graph(model.get_input_signature(), ...)``), then ``train_with_defaults``.
"""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _projects_support import change_imports, checkpoints, run_example  # noqa: E402

pytest.importorskip("cv2")
pytest.importorskip("zmq")

SEGMENTATION = '''\
import argparse
import configparser
import json
import os

import cv2
import numpy as np
import tensorflow as tf

from tensorpack import *
from tensorpack.dataflow import imgaug
from tensorpack.tfutils.summary import add_moving_summary, add_tensor_summary
from tensorpack.utils.argtools import get_data_format
from tensorpack.utils.gpu import get_num_gpu

NUM_CLASS = 3
BATCH = 4
CONFIG = """
[train]
max_epoch = 4
lr_schedule = 0:1e-2,2:1e-3
"""


class Model(ModelDesc):
    def __init__(self, data_format='channels_last'):
        self.data_format = get_data_format(data_format, keras_mode=False)

    def inputs(self):
        return [tf.placeholder(tf.float32, (None, 16, 16, 3), 'image'),
                tf.placeholder(tf.int32, (None, 16, 16), 'label')]

    def build_graph(self, image, label):
        image = image / 128.0 - 1
        with argscope(Conv2D, kernel_size=3, activation=tf.nn.relu,
                      data_format=self.data_format):
            l = Conv2D('conv0', image, 8)
            l = Conv2D('conv1', l, 8)
            logits = Conv2D('logits', l, NUM_CLASS, activation=tf.identity)
        tf.nn.softmax(logits, name='prob')
        tf.argmax(logits, axis=-1, output_type=tf.int32, name='pred')
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            logits=logits, labels=label), name='xentropy')
        wd = tf.multiply(1e-4, regularize_cost('.*/W', tf.nn.l2_loss), name='wd_cost')
        total = tf.add_n([cost, wd], name='total_cost')
        add_tensor_summary(total, ['scalar'])
        add_moving_summary(cost, wd)
        return total

    def optimizer(self):
        lr = tf.get_variable('learning_rate', initializer=1e-2, trainable=False)
        return tf.train.AdamOptimizer(lr)


class Synthetic(RNGDataFlow):
    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __iter__(self):
        for _ in range(self.size):
            image = self.rng.randint(0, 256, (20, 20, 3)).astype('uint8')
            label = (image[:, :, 0] // 86).astype('int32')
            yield [image, label]


def get_data(size, nr_gpu):
    ds = Synthetic(size)
    augs = [imgaug.Flip(horiz=True), imgaug.RandomCrop((18, 18)),
            imgaug.Resize((16, 16), interp=cv2.INTER_NEAREST)]
    ds = AugmentImageComponents(ds, augs, (0, 1))
    ds = PrefetchDataZMQ(ds, 1, hwm=50 * nr_gpu)
    return BatchData(ds, BATCH)


if __name__ == '__main__':
    parser = argparse.ArgumentParser()
    parser.add_argument('--gpu', default='0,1')
    args = parser.parse_args()
    config = configparser.ConfigParser()
    config.read_string(CONFIG)
    schedule = [tuple(point.split(':')) for point in config['train']['lr_schedule'].split(',')]

    nr_tower = len(args.gpu.split(','))
    logger.set_logger_dir(os.path.join('train_log', 'segmentation'), action='d')
    data = get_data(16, get_num_gpu() if os.environ.get('CUDA_VISIBLE_DEVICES') else 0)
    steps_per_epoch = len(data) / nr_tower
    callbacks = [
        ModelSaver(max_to_keep=2),
        PeriodicTrigger(ModelSaver(max_to_keep=10), every_k_epochs=2),
        ScheduledHyperParamSetter('learning_rate', schedule),
    ]
    trainer = SyncMultiGPUTrainerReplicated(list(range(nr_tower)), mode='nccl')
    launch_train_with_config(TrainConfig(
        model=Model(), dataflow=data, callbacks=callbacks, steps_per_epoch=steps_per_epoch,
        max_epoch=config['train']['max_epoch']), trainer)

    pred_config = PredictConfig(
        model=Model(), session_init=get_model_loader(tf.train.latest_checkpoint(
            logger.get_logger_dir())),
        input_names=['image'], output_names=['pred', 'prob'])
    predictor = OfflinePredictor(pred_config)
    images = np.random.RandomState(0).randint(0, 256, (2, 16, 16, 3)).astype('float32')
    pred, prob = predictor(images)
    ModelExporter(pred_config).export_compact(os.path.join(logger.get_logger_dir(), 'compact.pb'))

    graph = tf.Graph()
    with graph.as_default():
        graph_def = tf.GraphDef()
        with open(os.path.join(logger.get_logger_dir(), 'compact.pb'), 'rb') as f:
            graph_def.ParseFromString(f.read())
        tf.import_graph_def(graph_def, name='')
        with tf.Session(graph=graph) as sess:
            compact_prob = sess.run('prob:0', {'image:0': images})
    with open('result.json', 'w') as f:
        json.dump({'pred_shape': list(pred.shape), 'pred_dtype': str(pred.dtype),
                   'prob_sums': prob.sum(axis=-1).round(4).ravel().tolist()[:4],
                   'compact_matches': bool(np.allclose(compact_prob, prob, atol=1e-5))}, f)
'''

ADVERSARIAL = '''\
import os

import numpy as np
import tensorflow as tf

from tensorpack import *
from tensorpack.tfutils import get_model_loader


class Model(ModelDesc):
    def inputs(self):
        return [tf.placeholder(tf.float32, [None, 8, 8, 3], 'input'),
                tf.placeholder(tf.int32, [None], 'label')]

    def build_graph(self, image, label):
        def logits_of(x):
            with tf.variable_scope('net', reuse=tf.AUTO_REUSE):
                return FullyConnected('fc', x, 10)
        if get_current_tower_context().is_training:
            # a one-step attack inside the training tower, as adversarial training does
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                logits=logits_of(image), labels=label))
            grad, = tf.gradients(loss, image)
            image = tf.stop_gradient(image + 0.01 * tf.sign(grad))
        logits = logits_of(image)
        tf.nn.softmax(logits, name='prob')
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            logits=logits, labels=label), name='cost')
        add_moving_summary(cost)
        return cost

    def optimizer(self):
        return tf.train.MomentumOptimizer(0.01, 0.9)


if __name__ == '__main__':
    model = Model()
    trainer = HorovodTrainer(average=True)
    if trainer.is_chief:
        logger.set_logger_dir(os.path.join('train_log', 'adv'), action='d')
    data = FakeData([[8, 8, 8, 3], [8]], 100, random=False, dtype=['float32', 'int32'],
                    domain=[(0, 1), (0, 10)])
    trainer.setup_graph(model.get_input_signature(), StagingInput(QueueInput(data)),
                        model.build_graph, model.get_optimizer)
    trainer.train_with_defaults(callbacks=[ModelSaver(max_to_keep=1)], steps_per_epoch=2,
                                max_epoch=2, session_init=None)
    pred = OfflinePredictor(PredictConfig(
        model=Model(), session_init=get_model_loader(
            tf.train.latest_checkpoint(logger.get_logger_dir())),
        input_names=['input'], output_names=['prob']))
    prob, = pred(np.zeros([3, 8, 8, 3], np.float32))
    assert prob.shape == (3, 10), prob.shape
'''


def _write(directory, name, text):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(change_imports(text), encoding="utf-8")
    return directory


@pytest.mark.slow
def test_a_tensorpack_09_segmentation_project(tmp_path):
    code = _write(tmp_path / "code", "segmentation.py", SEGMENTATION)
    output = run_example(code, ["segmentation.py"], 400)
    log_dir = code / "train_log" / "segmentation"
    # 4 epochs of 2 steps (4 batches on 2 towers); frequent saver: 6, 8; long-lived: 4, 8.
    assert checkpoints(log_dir) == ["model-4.index", "model-6.index", "model-8.index"]
    with open(log_dir / "stats.json") as f:
        stats = json.load(f)
    assert "total_cost-summary" in stats[-1] and stats[-1]["learning_rate"] == pytest.approx(1e-3)
    with open(code / "result.json") as f:
        result = json.load(f)
    assert result["pred_shape"] == [2, 16, 16] and result["pred_dtype"] == "int32"
    assert result["prob_sums"] == [1.0] * 4 and result["compact_matches"]
    assert "mode='nccl' (NCCL, which runs on GPUs only) all-reduces with 'add_n'" in output


@pytest.mark.slow
def test_a_horovod_trainer_set_up_by_hand(tmp_path):
    code = _write(tmp_path / "code", "adversarial.py", ADVERSARIAL)
    run_example(code, ["adversarial.py"], 400)
    assert checkpoints(code / "train_log" / "adv") == ["model-4.index"]
