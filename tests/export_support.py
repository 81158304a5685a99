"""A small convnet to export, the op types an export holds, and training it briefly."""
import os

import numpy as np

import tfloop
from tfloop.compat import tf, tfv1

# The ops a tf.cond leaves in a graph: functional (TF2 control flow) or Switch/Merge (TF1).
COND_OPS = frozenset(["If", "StatelessIf", "Switch", "Merge"])


class ConvNet(tfloop.ModelDesc):
    """Convolutions and pooling in both data formats, a dense layer, ``prob``; the label only
    reaches the cost."""

    def inputs(self):
        return [tf.TensorSpec([None, 8, 8, 3], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        x = tfloop.Conv2D("conv0", image, 4, 3, activation=tf.nn.relu)
        x = tfloop.MaxPooling("pool0", x, 2)
        x = tf.transpose(x, [0, 3, 1, 2])
        x = tfloop.Conv2D("conv1", x, 6, 3, activation=tf.nn.relu, data_format="channels_first")
        x = tfloop.AvgPooling("pool1", x, 2, data_format="channels_first")
        logits = tfloop.FullyConnected("fc", x, 3)
        tf.nn.softmax(logits, name="prob")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.1)


def images(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 8, 8, 3).astype(np.float32), rng.randint(0, 3, n).astype(np.int32)


def initial_weights(model):
    """``{variable name: value}`` of ``model``'s variables as initialized."""
    with tf.Graph().as_default():
        placeholders = [tfv1.placeholder(s.dtype, s.shape, s.name)
                        for s in model.get_input_signature()]
        with tfloop.TowerContext("", is_training=False):
            model.build_graph(*placeholders)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            return {v.op.name: sess.run(v) for v in tfv1.global_variables()}


def train_convnet(logdir, steps=6):
    """Train :class:`ConvNet` for ``steps`` steps into ``logdir``; return the checkpoint."""
    x, y = images(4 * steps, seed=1)
    tfloop.logger.set_logger_dir(logdir, action="keep")
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=ConvNet(), data=tfloop.FeedInput([[x[i:i + 4], y[i:i + 4]]
                                                for i in range(0, len(x), 4)]),
        max_epoch=1, callbacks=[tfloop.ModelSaver()], monitors=[]), tfloop.SimpleTrainer())
    return tfloop.get_checkpoint_path(logdir)


def graph_def_ops(graph_def):
    """Every op type of ``graph_def``, its function library included."""
    ops = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        ops.update(node.op for node in function.node_def)
    return ops


def saved_model_ops(directory):
    """Every op type of a SavedModel's MetaGraphs, their function libraries included."""
    from tensorflow.core.protobuf import saved_model_pb2
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(directory, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    return set().union(*(graph_def_ops(meta.graph_def) for meta in saved.meta_graphs))
