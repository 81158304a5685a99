"""TensorInput, PlaceholderInput, FeedfreeInput and remap_input_source (tfloop.input_source)."""
import numpy as np
import pytest
from support import LinearModel, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.input_source import (
    FeedfreeInput,
    PlaceholderInput,
    TensorInput,
    TFDatasetInput,
    remap_input_source,
)

X, Y = make_regression_data(12)


def test_tensor_input_trains_from_the_function_tensors():
    def tensors():
        dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(4).repeat()
        return list(tfv1.data.make_one_shot_iterator(dataset).get_next())

    trainer = train_linear(data=TensorInput(tensors, size=3), max_epoch=2)
    assert trainer.global_step == 6


def test_tensor_input_checks_what_the_function_returns():
    source = TensorInput(lambda: [tf.zeros([4, 3])])
    with tf.Graph().as_default():
        source.setup(LinearModel().get_input_signature())
        with pytest.raises(ValueError, match="must return a list of 2 tensors"):
            source.get_input_tensors()


def test_remap_input_source_orders_tensors_by_name():
    def label_first():
        return tf.data.Dataset.from_tensor_slices((Y, X)).batch(4)

    costs, reference = [], []
    train_linear([tfloop.ProcessTensors(["cost"], costs.append)],
                 data=remap_input_source(TFDatasetInput(label_first), ["y", "x"]), max_epoch=1)
    train_linear([tfloop.ProcessTensors(["cost"], reference.append)],
                 data=tfloop.FeedInput(batches(X, Y, 4)), max_epoch=1)
    np.testing.assert_allclose(costs, reference, rtol=1e-6)


def test_remap_input_source_names_what_does_not_fit():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="the model also needs \\['y'\\]"):
            remap_input_source(tfloop.DummyConstantInput(), ["x"]).setup(
                LinearModel().get_input_signature())


def test_placeholder_input_and_feedfree_instances():
    source = PlaceholderInput()
    with tf.Graph().as_default():
        source.setup(LinearModel().get_input_signature())
        x, y = source.get_input_tensors()
        assert (x.op.type, x.op.name, y.op.name) == ("Placeholder", "x", "y")
    assert isinstance(tfloop.DatasetInput(lambda: None), FeedfreeInput)
    assert isinstance(tfloop.DummyConstantInput(), FeedfreeInput)
    assert not isinstance(tfloop.FeedInput([]), FeedfreeInput)
    assert not isinstance(source, FeedfreeInput)
