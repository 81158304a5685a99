"""Integers for a narrower integer input (issue 44): taken when every value is in the input
dtype's range, refused otherwise in every input source, naming the source, the input, the range,
a value outside it and the fix; a cast would wrap it around (300 -> 44 in uint8, 2**32 + 5 -> 5
in int32) and train on other labels silently. Widening casts stay free."""
import numpy as np
import pytest
from support import make_regression_data

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.input.casting import check_integer_range, range_checked_cast
from tfloop.utils.integral import out_of_range_value


class Classifier(tfloop.ModelDesc):
    """Four classes; the label input has the dtype given."""

    def __init__(self, label_dtype):
        self.label_dtype = label_dtype

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"),
                tf.TensorSpec([None], self.label_dtype, "label")]

    def build_graph(self, x, label):
        w = tfv1.get_variable("w", [3, 4], initializer=tfv1.zeros_initializer())
        labels = tf.math.floormod(tf.cast(label, tf.int64), 4)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=tf.matmul(x, w)), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.5)


class Labels(tfloop.Callback):
    """The label values and dtype each step trained with."""

    def __init__(self):
        self.seen = []

    def _setup_graph(self):
        self.label = self.get_tensors_maybe_in_tower(["label"])[0]

    def _before_run(self, ctx):
        return self.label

    def _after_run(self, ctx, values):
        self.seen.append((values.results.dtype.name, values.results.tolist()))


def _batches(labels):
    x, _ = make_regression_data(len(labels))
    return [[x[i:i + 4], labels[i:i + 4]] for i in range(0, len(labels), 4)]


def _dataset(labels):
    x, _ = make_regression_data(len(labels))
    return tf.data.Dataset.from_tensor_slices((x, labels)).batch(4)


SOURCES = {
    "FeedInput": lambda labels, dtype: tfloop.FeedInput(_batches(labels)),
    "QueueInput": lambda labels, dtype: tfloop.QueueInput(_batches(labels)),
    "DatasetInput": lambda labels, dtype: tfloop.DatasetInput(_dataset(labels)),
    "DatasetInput of a DataFlow": lambda labels, dtype: tfloop.DatasetInput(
        tfloop.DatasetInput.dataflow_to_dataset(
            tfloop.DataFromList(_batches(labels), shuffle=False), [tf.float32, dtype])),
}


def _train(source, label_dtype, callbacks=()):
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=Classifier(label_dtype), data=source, callbacks=list(callbacks), extra_callbacks=[],
        max_epoch=1, steps_per_epoch=2), trainer)
    return trainer


OVERFLOWS = [  # (labels, input dtype, the value named, the range named)
    ([1, 300, -1, 2, 0, 1, 2, 3], tf.uint8, "-1", "0 to 255"),
    ([1, 300, 7, 2, 0, 1, 2, 3], tf.uint8, "300", "0 to 255"),
    ([1, 2, 3, 2 ** 32 + 5, 0, 1, 2, 3], tf.int32, "4294967301", "-2147483648 to 2147483647"),
]


@pytest.mark.parametrize("kind", ["FeedInput", "QueueInput"])
@pytest.mark.parametrize("labels, dtype, value, bounds", OVERFLOWS)
def test_python_data_out_of_a_narrower_range_is_refused_naming_it(kind, labels, dtype, value,
                                                                  bounds):
    with pytest.raises(ValueError) as info:
        _train(SOURCES[kind](np.array(labels, np.int64), dtype), dtype)
    assert str(info.value) == (
        f"{kind} datapoint 0: input label: {dtype.name} (None,) holds integers from {bounds}; "
        f"got {value}. A cast would wrap the value around. Declare the input as int64 (or "
        f"another dtype that holds it) in inputs(), or bring the values into that range in "
        f"the data.")


@pytest.mark.parametrize("labels, dtype, value, bounds", OVERFLOWS)
def test_a_dataset_out_of_a_narrower_range_stops_training_naming_it(labels, dtype, value,
                                                                    bounds):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _train(SOURCES["DatasetInput"](np.array(labels, np.int64), dtype), dtype)
    assert (f"[DatasetInput: input label: {dtype.name} (None,) holds integers from {bounds}; "
            f"got] [{value}] [A cast would wrap the value around. Declare the input as int64 (or "
            f"another dtype that holds it) in inputs(), or bring the values into that range in "
            f"the data.]") in str(info.value)


def test_a_dataflow_out_of_a_narrower_range_stops_training_naming_it():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _train(SOURCES["DatasetInput of a DataFlow"](np.array(OVERFLOWS[0][0], np.int64),
                                                     tf.uint8), tf.uint8)
    assert ("ValueError: dataflow_to_dataset datapoint 0: input component 1: uint8 holds "
            "integers from 0 to 255; got -1.") in str(info.value)


@pytest.mark.parametrize("kind", sorted(SOURCES))
@pytest.mark.parametrize("dtype", [tf.uint8, tf.int32])
def test_in_range_integers_train_a_narrower_input_as_its_own_dtype_does(kind, dtype):
    labels = np.array([0, 1, 2, 3, 255, 254, 1, 0])
    wide, own = Labels(), Labels()
    _train(SOURCES[kind](labels.astype(np.int64), dtype), dtype, [wide])
    _train(SOURCES[kind](labels.astype(dtype.as_numpy_dtype), dtype), dtype, [own])
    assert wide.seen == own.seen == [(dtype.name, [0, 1, 2, 3]), (dtype.name, [255, 254, 1, 0])]


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_widening_casts_are_taken_unchecked(kind):
    labels = Labels()
    _train(SOURCES[kind](np.array([-5, 1, 2, 3, 127, -128, 0, 9], np.int8), tf.int64),
           tf.int64, [labels])
    assert labels.seen == [("int64", [-5, 1, 2, 3]), ("int64", [127, -128, 0, 9])]


def test_the_graph_check_is_an_assert_only_for_narrowing_casts():
    graph = tf.Graph()
    with graph.as_default():
        values = tfv1.placeholder(tf.int64, [None])
        cast = range_checked_cast(values, tf.int8, "DatasetInput", "y: int8 (None,)")
        with tfv1.Session(graph=graph) as sess:
            assert sess.run(cast, {values: [-128, 127]}).tolist() == [-128, 127]
            assert sess.run(cast, {values: []}).tolist() == []
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[-129\]"):
                sess.run(cast, {values: [-129, 500]})
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[128\]"):
                sess.run(cast, {values: [0, 128]})


@pytest.mark.parametrize("values, dtype, bad", [
    ([0, 255], np.uint8, None), ([0, 256], np.uint8, 256), ([-1, 256], np.uint8, -1),
    ([2 ** 63 - 1], np.int64, None), ([np.uint64(2 ** 64 - 1)], np.int64, 2 ** 64 - 1),
    ([], np.int8, None), ([-2 ** 31 - 1], np.int32, -2 ** 31 - 1),
])
def test_out_of_range_value(values, dtype, bad):
    assert out_of_range_value(np.array(values), dtype) == bad


def test_check_integer_range_casts_what_fits():
    cast = check_integer_range(np.array([3, 200], np.int64), tf.uint8, "FeedInput", "y")
    assert cast.dtype == np.uint8 and cast.tolist() == [3, 200]
