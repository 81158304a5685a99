"""What the precision tests share: a tiny convnet, a callback that counts the reduced-precision
and XLA nodes of a real step, and digits accuracy after a fixed number of steps."""
import collections

import numpy as np
from op_types_support import count_op_types, op_types

import tfloop
from tfloop.compat import tf, tfv1

REDUCED = {tf.bfloat16.as_datatype_enum: "bfloat16", tf.float16.as_datatype_enum: "float16"}


class ConvNet(tfloop.ModelDesc):
    """A tiny convnet with tfloop layers on 8x8x1 images, 3 classes."""

    def inputs(self):
        return [tf.TensorSpec([None, 8, 8, 1], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        x = tfloop.Conv2D("conv", image, 4, 3, activation=tf.nn.relu)
        logits = tfloop.FullyConnected("fc", tf.reshape(x, [-1, 8 * 8 * 4]), 3)
        tf.identity(tf.nn.softmax(logits), name="prob")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

    def optimizer(self):
        return tfv1.train.MomentumOptimizer(0.05, 0.9)


def images(n=16, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, 8, 8, 1).astype(np.float32), rng.randint(0, 3, n).astype(np.int32)


class TinyResNet(ConvNet):
    """The layers of bench's ResNet-20 at 8x8: convolution, BatchNorm and ReLU, one residual
    block, global average pooling, a dense layer, weight decay; ``classes`` outputs."""

    def __init__(self, classes=3, filters=8):
        self.classes, self.filters = classes, filters

    def build_graph(self, image, label):
        def conv_bn(name, x):
            return tfloop.BatchNorm(name + "_bn", tfloop.Conv2D(name, x, self.filters, 3,
                                                                use_bias=False))

        x = tf.nn.relu(conv_bn("conv0", image))
        x = tf.nn.relu(x + conv_bn("conv2", tf.nn.relu(conv_bn("conv1", x))))
        logits = tfloop.FullyConnected("fc", tfloop.GlobalAvgPooling("gap", x), self.classes)
        tf.identity(tf.nn.softmax(logits), name="prob")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits))
        decay = tfloop.regularize_cost(".*/W", tfloop.l2_regularizer(1e-4))
        return tf.add(cost, decay, name="cost")


class StepGraph(tfloop.Callback):
    """Runs one more training step at the end of training with partition graphs recorded, and
    counts reduced-precision and XLA nodes in what ran (``reduced``; by op type in
    ``reduced_ops``), every op type of the step (``ops``), its Cast nodes and the dtypes the
    optimizer's updates take; records the variables' dtypes. Op types are TensorFlow's, whatever
    oneDNN runs them as (:func:`op_types_support.op_types`)."""

    def _after_train(self):
        metadata = tfv1.RunMetadata()
        self.trainer.sess.run(self.trainer.train_op,
                              options=tfv1.RunOptions(output_partition_graphs=True),
                              run_metadata=metadata)
        self.reduced, self.reduced_ops = collections.Counter(), collections.Counter()
        nodes = [node for graph in metadata.partition_graphs for node in graph.node]
        for node in nodes:
            for key in ("T", "DstT", "dtype"):
                if key in node.attr and node.attr[key].type in REDUCED:
                    self.reduced[REDUCED[node.attr[key].type]] += 1
                    self.reduced_ops.update(op_types(node))
                    break
        self.ops = count_op_types(nodes)
        self.xla, self.casts = self.ops["_XlaCompile"], self.ops["Cast"]
        self.update_dtypes = {tf.as_dtype(node.attr["T"].type) for node in nodes
                              if any(op.startswith("ResourceApply") for op in op_types(node))}
        self.dtypes = {v.dtype.base_dtype for v in tfv1.global_variables()}
        found = {v.op.name: v for v in tfv1.global_variables()}
        scale, skipped = found.get("loss_scale/scale"), found.get("loss_scale/skipped_steps")
        self.loss_scale = self.trainer.sess.run(scale) if scale is not None else None
        self.skipped_steps = self.trainer.sess.run(skipped) if skipped is not None else None
        if hasattr(self.trainer, "check_replicas"):
            self.replica_difference = self.trainer.check_replicas()


def assert_default_loss_scale(probe):
    """The run was loss-scaled from TrainConfig's default 2 ** 15, halved once per skipped step
    (real float16 may overflow at 2 ** 15; the default growth interval is not reached)."""
    assert probe.loss_scale is not None and probe.loss_scale * 2 ** probe.skipped_steps == 2 ** 15


def train_convnet(trainer=None, steps=4, **kwargs):
    x, y = images()
    probe = StepGraph()
    data = tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4).repeat())
    config = tfloop.TrainConfig(model=kwargs.pop("model", ConvNet()), data=data,
                                callbacks=[probe] + kwargs.pop("callbacks", []),
                                steps_per_epoch=steps, max_epoch=1, **kwargs)
    tfloop.launch_train_with_config(config, trainer or tfloop.SimpleTrainer())
    return probe



class DigitsNet(ConvNet):
    """A small convnet on scikit-learn's 8x8 digits, 10 classes."""

    def inputs(self):
        return [tf.TensorSpec([None, 8, 8, 1], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        x = tfloop.Conv2D("conv0", image, 16, 3, activation=tf.nn.relu)
        x = tfloop.MaxPooling("pool", tfloop.Conv2D("conv1", x, 32, 3, activation=tf.nn.relu), 2)
        logits = tfloop.FullyConnected("fc", tf.reshape(x, [-1, 4 * 4 * 32]), 10)
        tf.identity(tf.nn.softmax(logits), name="prob")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")


def digits_accuracy(mixed_precision, steps=300):
    """Test accuracy of :class:`DigitsNet` after ``steps`` steps of batch 64 (same seeds)."""
    return digits_result(mixed_precision, steps)["accuracy"]


def digits_result(mixed_precision, steps=300, model=None):
    """Test accuracy and test cost (float32 predictor) of ``model`` (:class:`DigitsNet`) after
    ``steps`` steps of batch 64 on scikit-learn's digits (same seeds)."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[..., None]
    y = digits.target.astype(np.int32)
    train_x, train_y, test_x, test_y = x[:1400], y[:1400], x[1400:], y[1400:]
    tf.random.set_seed(1)

    class Evaluate(tfloop.Callback):
        def _setup_graph(self):
            self.pred = self.trainer.get_predictor(["image", "label"], ["prob", "cost"])

        def _after_train(self):
            prob, cost = self.pred(test_x, test_y)
            self.value = {"accuracy": float(np.mean(prob.argmax(axis=1) == test_y)),
                          "cost": float(cost)}

    evaluate = Evaluate()
    data = tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices(
        (train_x, train_y)).shuffle(1400, seed=0).repeat().batch(64))
    config = tfloop.TrainConfig(model=model or DigitsNet(), data=data, callbacks=[evaluate],
                                monitors=[], steps_per_epoch=steps, max_epoch=1,
                                mixed_precision=mixed_precision)
    trainer = tfloop.SimpleTrainer()
    with trainer.graph.as_default():
        tfv1.set_random_seed(1)
    tfloop.launch_train_with_config(config, trainer)
    return evaluate.value
