"""ResNet models for the precision and GPU benchmarks, written with tfloop's layers.

* ``resnet20``: the CIFAR ResNet-20 (3 stages of 3 basic blocks, 16/32/64 filters) on 32x32x3.
* ``resnet50``: the ImageNet ResNet-50 (bottleneck blocks 3-4-6-3, 64-512 filters, x4 expansion)
  on 224x224x3, 1000 classes.

Both: BatchNorm after every convolution, momentum 0.9, weight decay 1e-4 on the convolution
kernels, softmax cross-entropy; constant synthetic data held in the graph by a repeating
``tf.data`` pipeline. :func:`keras_model` builds the same networks with Keras 3 layers.
"""
import numpy as np
import tensorflow as tf

import tfloop
from tfloop.compat import tfv1

SPECS = {  # name -> (image size, classes, blocks per stage, first filters, bottleneck)
    "resnet20": (32, 10, (3, 3, 3), 16, False),
    "resnet50": (224, 1000, (3, 4, 6, 3), 64, True),
}


def _conv_bn(name, x, filters, kernel, stride=1, relu=True):
    x = tfloop.Conv2D(name, x, filters, kernel, strides=stride, use_bias=False)
    x = tfloop.BatchNorm(name + "_bn", x)
    return tf.nn.relu(x) if relu else x


def _basic(name, x, filters, stride):
    shortcut = x
    if stride != 1 or x.shape[-1] != filters:
        shortcut = _conv_bn(name + "/short", x, filters, 1, stride, relu=False)
    y = _conv_bn(name + "/c1", x, filters, 3, stride)
    y = _conv_bn(name + "/c2", y, filters, 3, relu=False)
    return tf.nn.relu(y + shortcut)


def _bottleneck(name, x, filters, stride):
    shortcut = x
    if stride != 1 or x.shape[-1] != filters * 4:
        shortcut = _conv_bn(name + "/short", x, filters * 4, 1, stride, relu=False)
    y = _conv_bn(name + "/c1", x, filters, 1)
    y = _conv_bn(name + "/c2", y, filters, 3, stride)
    y = _conv_bn(name + "/c3", y, filters * 4, 1, relu=False)
    return tf.nn.relu(y + shortcut)


def logits_of(name, image):
    """The ResNet ``name``'s logits for ``image`` (NHWC float32)."""
    _, classes, blocks, filters, bottleneck = SPECS[name]
    block = _bottleneck if bottleneck else _basic
    if bottleneck:
        x = _conv_bn("stem", image, filters, 7, 2)
        x = tfloop.MaxPooling("stem_pool", x, 3, 2, padding="same")
    else:
        x = _conv_bn("stem", image, filters, 3)
    for stage, count in enumerate(blocks):
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            x = block(f"s{stage}b{i}", x, filters * 2 ** stage, stride)
    return tfloop.FullyConnected("fc", tfloop.GlobalAvgPooling("gap", x), classes)


class ResNet(tfloop.ModelDesc):
    """ResNet ``name`` as a ModelDesc (see the module docstring).

    Example:
        >>> model = ResNet("resnet20")
    """

    def __init__(self, name):
        self.name = name
        self.size, self.classes = SPECS[name][:2]

    def inputs(self):
        return [tf.TensorSpec([None, self.size, self.size, 3], tf.float32, "image"),
                tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, image, label):
        logits = logits_of(self.name, image)
        tf.nn.softmax(logits, name="prob")
        cost = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits))
        decay = tfloop.regularize_cost(".*/W", tfloop.l2_regularizer(1e-4), name="wd_cost")
        return tf.add(cost, decay, name="cost")

    def optimizer(self):
        return tfv1.train.MomentumOptimizer(0.05, 0.9)


def synthetic_data(name, batch, batches=4, seed=0):
    """A function building a repeating dataset of ``batches`` constant random batches."""
    size, classes = SPECS[name][:2]
    rng = np.random.RandomState(seed)
    images = rng.rand(batch * batches, size, size, 3).astype(np.float32)
    labels = rng.randint(0, classes, batch * batches).astype(np.int32)
    return lambda: tf.data.Dataset.from_tensor_slices((images, labels)).batch(
        batch, drop_remainder=True).cache().repeat()


def keras_model(name):
    """The same ResNet with Keras 3 layers (same shapes, initializer, BatchNorm momentum and
    epsilon, weight decay), logits cast to float32 as Keras's mixed-precision guide asks.
    Built under whatever dtype policy is set."""
    import keras
    layers = keras.layers
    size, classes, blocks, filters, bottleneck = SPECS[name]

    def conv_bn(x, filters, kernel, stride=1, relu=True):
        x = layers.Conv2D(filters, kernel, stride, padding="same", use_bias=False,
                          kernel_initializer=keras.initializers.VarianceScaling(2.0),
                          kernel_regularizer=keras.regularizers.L2(0.5e-4))(x)
        x = layers.BatchNormalization(momentum=0.9, epsilon=1e-5)(x)
        return layers.ReLU()(x) if relu else x

    def block(x, filters, stride):
        out = filters * 4 if bottleneck else filters
        shortcut = x
        if stride != 1 or x.shape[-1] != out:
            shortcut = conv_bn(x, out, 1, stride, relu=False)
        if bottleneck:
            y = conv_bn(conv_bn(conv_bn(x, filters, 1), filters, 3, stride), out, 1, relu=False)
        else:
            y = conv_bn(conv_bn(x, filters, 3, stride), filters, 3, relu=False)
        return layers.ReLU()(layers.Add()([y, shortcut]))

    image = keras.Input((size, size, 3))
    x = conv_bn(image, filters, 7 if bottleneck else 3, 2 if bottleneck else 1)
    if bottleneck:
        x = layers.MaxPooling2D(3, 2, padding="same")(x)
    for stage, count in enumerate(blocks):
        for i in range(count):
            x = block(x, filters * 2 ** stage, 2 if stage > 0 and i == 0 else 1)
    logits = layers.Dense(classes)(layers.GlobalAveragePooling2D()(x))
    return keras.Model(image, layers.Activation("linear", dtype="float32")(logits))
