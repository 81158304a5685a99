"""Inputs whose leading ``None`` dimension is not a batch dimension: one datapoint per step (an
image and its boxes, as tensorpack's FasterRCNN feeds them) trains with every input source and the
multi-tower trainers, as it does in tensorpack, which gives a leading ``None`` no batch meaning."""
import numpy as np
import pytest
from support import StepValues

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.train.multigpu import SyncMultiGPUTrainerParameterServer, SyncMultiGPUTrainerReplicated


class ImageAndBoxes(tfloop.ModelDesc):
    """One image of any size and its boxes per step; the cost reads both."""

    def inputs(self):
        return [tf.TensorSpec((None, None, 3), tf.float32, "image"),
                tf.TensorSpec((None, 4), tf.float32, "boxes")]

    def build_graph(self, image, boxes):
        w = tfv1.get_variable("w", [], initializer=tfv1.ones_initializer())
        cost = tf.reduce_mean(image) * w + tf.reduce_sum(boxes) * w * w
        tf.identity(tf.shape(image)[0] * 10 + tf.shape(boxes)[0], name="sizes")
        return tf.identity(cost, name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.01)


def datapoints():
    """8x8x3 images with 2 boxes, 6x6x3 ones with 3 boxes, alternating."""
    rng = np.random.RandomState(0)
    return [[rng.rand(8, 8, 3).astype(np.float32), rng.rand(2, 4).astype(np.float32)],
            [rng.rand(6, 6, 3).astype(np.float32), rng.rand(3, 4).astype(np.float32)]]


def train(data, trainer=None, steps=4):
    sizes = StepValues("sizes:0")
    config = tfloop.TrainConfig(model=ImageAndBoxes(), data=data, callbacks=[sizes],
                                steps_per_epoch=steps, max_epoch=1)
    tfloop.launch_train_with_config(config, trainer or tfloop.SimpleTrainer())
    return sizes.values


@pytest.mark.parametrize("make_input", [
    lambda dps: tfloop.FeedInput(dps),
    lambda dps: tfloop.QueueInput(dps),
    lambda dps: tfloop.StagingInput(tfloop.QueueInput(dps)),
], ids=["FeedInput", "QueueInput", "StagingInput"])
def test_one_image_and_its_boxes_per_step_trains(make_input):
    assert [int(v) for v in train(make_input(datapoints()))] == [82, 63, 82, 63]


@pytest.mark.parametrize("make_trainer", [
    lambda: SyncMultiGPUTrainerReplicated(2), lambda: SyncMultiGPUTrainerParameterServer(2),
], ids=["replicated", "parameter-server"])
def test_multi_tower_trainers_take_one_datapoint_per_tower(make_trainer):
    # Each tower dequeues a datapoint of its own: one 8x8 image with 2 boxes, one 6x6 with 3.
    sizes = train(tfloop.QueueInput(datapoints() * 4), trainer=make_trainer(), steps=2)
    assert len(sizes) == 2 and {int(v) for v in sizes} <= {82, 63}


def test_fixed_shape_inputs_of_different_batch_sizes_are_still_refused():
    # x (None, 3) and y (None,) read as batches: 4 examples of x and 2 of y is a batching mistake.
    from support import train_linear
    x, y = np.zeros((4, 3), np.float32), np.zeros(2, np.float32)
    with pytest.raises(ValueError, match=r"different batch sizes \(x: 4, y: 2\)"):
        train_linear(data=tfloop.QueueInput([[x, y]]))
