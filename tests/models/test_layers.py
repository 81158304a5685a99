"""Layers share variables across towers, switch behaviour with the tower context, and train."""
import numpy as np
import pytest

import tfloop
from tfloop import BatchNorm, Conv2D, Dropout, FullyConnected, MaxPooling
from tfloop.compat import tf, tfv1


class SmallConvNet(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 8, 8, 1], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        x = Conv2D("conv0", image, 4, 3)
        x = tf.nn.relu(BatchNorm("bn0", x))
        x = MaxPooling("pool0", x, 2)
        x = Dropout("drop", x, rate=0.5)
        logits = FullyConnected("fc", x, 3)
        tf.identity(logits, name="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.05)


def build(model, towers):
    graph = tf.Graph()
    with graph.as_default():
        sig = model.get_input_signature()
        func = tfloop.TowerFunc(model.build_graph, sig)
        inputs = [tfv1.placeholder(s.dtype, s.shape) for s in sig]
        for name, training in towers:
            with tfloop.TowerContext(name, is_training=training):
                func(*inputs)
    return graph, func, inputs


def test_shapes_and_one_set_of_variables_for_two_towers():
    graph, func, _ = build(SmallConvNet(), [("", True), ("InferenceTower", False)])
    names = sorted(v.op.name for v in graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES))
    assert names == ["bn0/beta", "bn0/gamma", "bn0/mean/EMA", "bn0/variance/EMA", "conv0/W",
                     "conv0/b", "fc/W", "fc/b"]
    assert func.towers[0]["conv0/output"].shape.as_list() == [None, 8, 8, 4]
    assert func.towers[0]["pool0/output"].shape.as_list() == [None, 4, 4, 4]
    assert func.towers[1]["logits"].shape.as_list() == [None, 3]
    # Batch-norm updates come from the training tower only.
    assert len(graph.get_collection(tfv1.GraphKeys.UPDATE_OPS)) == 2


def test_dropout_and_batchnorm_follow_the_tower_context():
    graph, func, (image, label) = build(SmallConvNet(), [("", True), ("InferenceTower", False)])
    batch = np.random.RandomState(0).rand(5, 8, 8, 1).astype(np.float32)
    with tfv1.Session(graph=graph) as sess:
        sess.run(tfv1.global_variables_initializer())
        infer = func.towers[1]["logits"]
        first = sess.run(infer, {image: batch})
        np.testing.assert_array_equal(first, sess.run(infer, {image: batch}))
        train = func.towers[0]["drop/output"]
        a, b = sess.run(train, {image: batch}), sess.run(train, {image: batch})
        assert (a == 0).sum() > 0 and not np.array_equal(a, b)


def test_batchnorm_moving_averages_update_with_run_update_ops():
    rng = np.random.RandomState(0)
    data = [(rng.rand(6, 8, 8, 1).astype(np.float32) + 3.0, rng.randint(0, 3, 6).astype(np.int32))
            for _ in range(4)]
    means = []

    class ReadMean(tfloop.Callback):
        def _setup_graph(self):
            self.mean = self.get_tensors_maybe_in_tower(["bn0/mean/EMA:0"])[0]

        def _after_train(self):
            means.append(self.trainer.sess.run(self.mean))

    config = tfloop.TrainConfig(model=SmallConvNet(), data=data, callbacks=[ReadMean()],
                                extra_callbacks=[tfloop.RunUpdateOps()], monitors=[], max_epoch=2)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    # Moving means start at exactly 0; the update ops moved them towards the batch means.
    assert np.abs(means[0]).max() > 0.01


def test_layer_input_errors():
    with tf.Graph().as_default():
        flat = tfv1.placeholder(tf.float32, [None])
        with pytest.raises(ValueError, match="needs an input of rank >= 2"):
            FullyConnected("fc", flat, 3)
