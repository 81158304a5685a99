"""Dataset elements against inputs(): safe casts with a note, unsafe ones refused with the cast to
write, shapes checked statically and, where the dataset's spec is loose, at run time."""
import numpy as np
import pytest
from support import LinearModel, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.input.casting import INTEGRAL, NARROWING, SAFE, SAME, UNSAFE, cast_kind


class InputLog(tfloop.Callback):
    def __init__(self):
        self.costs, self.inputs = [], []

    def _setup_graph(self):
        self.tensors = self.get_tensors_maybe_in_tower(["cost", "x", "y"])

    def _before_run(self, ctx):
        return self.tensors

    def _after_run(self, ctx, values):
        cost, x, y = values.results
        self.costs.append(float(cost))
        self.inputs.append((x.dtype.name, y.dtype.name))


class Classifier(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        w = tfv1.get_variable("w", [3, 4], initializer=tfv1.zeros_initializer())
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=tf.matmul(x, w)), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.5)


@pytest.mark.parametrize("got, want, kind", [
    (tf.float32, tf.float32, SAME), (tf.float64, tf.float32, SAFE), (tf.float16, tf.float32, SAFE),
    (tf.int64, tf.int32, NARROWING), (tf.uint8, tf.int32, SAFE), (tf.int32, tf.float32, SAFE),
    (np.int64, tf.uint8, NARROWING), (tf.int8, tf.uint64, NARROWING), (np.uint32, tf.int32,
                                                                       NARROWING),
    (np.uint32, tf.int64, SAFE), (tf.int32, tf.int64, SAFE), (tf.bool, tf.uint8, SAFE),
    (tf.bool, tf.float32, SAFE), (tf.float32, tf.int32, INTEGRAL), (np.float64, tf.uint8, INTEGRAL),
    (tf.string, tf.float32, UNSAFE),
    (tf.float32, tf.string, UNSAFE), (tf.complex64, tf.float32, UNSAFE),
    (np.float64, tf.float32, SAFE), (np.dtype("<U3"), tf.float32, UNSAFE),
    (np.dtype("<U3"), tf.string, SAME), (np.int64, np.int64, SAME),
])
def test_cast_kind(got, want, kind):
    assert cast_kind(got, want) == kind


def test_numpy_float64_dataset_trains_like_float32_with_a_note(tfloop_log):
    x, y = make_regression_data(12)
    wide, narrow = InputLog(), InputLog()
    train_linear([wide], data=tf.data.Dataset.from_tensor_slices(
        (x.astype(np.float64), y.astype(np.float64))).batch(4), max_epoch=2)
    train_linear([narrow], data=tf.data.Dataset.from_tensor_slices((x, y)).batch(4), max_epoch=2)
    assert wide.costs == narrow.costs
    assert set(wide.inputs) == {("float32", "float32")}
    notes = [m for level, m in tfloop_log if "safe cast" in m]
    assert notes == [
        ("DatasetInput: input x is float64 in the dataset and is cast to float32 in the graph, as "
        "inputs() declares (a safe cast). To skip the cast: "
        "ds = ds.map(lambda x, y: (tf.cast(x, tf.float32), y))"),
        ("DatasetInput: input y is float64 in the dataset and is cast to float32 in the graph, as "
        "inputs() declares (a safe cast). To skip the cast: "
        "ds = ds.map(lambda x, y: (x, tf.cast(y, tf.float32)))")]
    assert {level for level, m in tfloop_log if "safe cast" in m} == {"INFO"}


def test_int64_labels_train_an_int32_input():
    x, _ = make_regression_data(12)
    labels = np.arange(12, dtype=np.int64) % 4
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=Classifier(), data=tf.data.Dataset.from_tensor_slices((x, labels)).batch(4),
        max_epoch=1), trainer)
    assert trainer.global_step == 3


@pytest.mark.parametrize("element, match", [
    (lambda x, y: (x.astype(np.complex64), y),
     (r"Dataset component 0 is complex64, which input x: float32 \(None, 3\) cannot take: "
     r"complex64 -> float32 is not a safe cast\. Convert it in the dataset if that is what you "
     r"mean: ds = ds\.map\(lambda x, label: \(tf\.cast\(x, tf\.float32\), label\)\)$")),
    (lambda x, y: (x.astype(str), y),
     (r"Dataset component 0 is string, .*ds = ds\.map\(lambda x, label: "
     r"\(tf\.strings\.to_number\(x, tf\.float32\), label\)\)$")),
    (lambda x, y: {"x": x, "label": y.astype(str)},
     (r"Dataset component 'label' is string, .*ds = ds\.map\(lambda d: \{\*\*d, 'label': "
     r"tf\.strings\.to_number\(d\['label'\], tf\.int32\)\}\)$")),
])
def test_unsafe_cast_names_the_component_and_the_cast_to_write(element, match):
    x, _ = make_regression_data(12)
    labels = np.arange(12) % 4
    dataset = tf.data.Dataset.from_tensor_slices(element(x, labels)).batch(4)
    with pytest.raises(ValueError, match=match):
        tfloop.launch_train_with_config(tfloop.TrainConfig(
            model=Classifier(), data=dataset, max_epoch=1), tfloop.SimpleTrainer())


def test_static_shape_mismatch_is_refused_before_training():
    x, y = make_regression_data(12)
    with pytest.raises(ValueError, match=r"^Dataset component 0 has shape \(None, 1\), which does "
                                         r"not match input x: float32 \(None, 3\): make the "
                                         r"dataset give that shape, or change inputs\(\)\.$"):
        train_linear([], data=tf.data.Dataset.from_tensor_slices((x[:, :1], y)).batch(4))


def _loose(x, y):
    """A generator dataset whose spec fixes nothing about x's shape."""
    def generate():
        for i in range(0, len(x), 4):
            yield x[i:i + 4], y[i:i + 4]
    return tf.data.Dataset.from_generator(generate, output_signature=(
        tf.TensorSpec(None, tf.float32), tf.TensorSpec([None], tf.float32))).repeat()


def test_a_batch_of_another_shape_from_a_loose_dataset_stops_training_naming_the_input(
        tfloop_log):
    x, y = make_regression_data(12)
    # (4, 1) would broadcast against (3, 1) weights' output: silent wrong training without the check
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        train_linear([], data=_loose(x[:, :1], y), steps_per_epoch=3, max_epoch=1)
    message = info.value.message
    assert "Node: 'x'" in message
    assert "Shape of tensor" in message and "[4,1] is not compatible with expected shape [?,3]" \
        in message
    assert any("does not guarantee the shapes inputs() declares for x (None, 3) (dataset: "
               "<unknown>)" in m for _, m in tfloop_log)


def test_a_loose_dataset_of_the_right_shapes_trains_like_a_tight_one():
    x, y = make_regression_data(12)
    loose, tight = InputLog(), InputLog()
    trainer = train_linear([loose], data=_loose(x, y), steps_per_epoch=3, max_epoch=2)
    train_linear([tight], data=tf.data.Dataset.from_tensor_slices((x, y)).batch(4), max_epoch=2)
    assert loose.costs == tight.costs
    checks = [op.name for op in trainer.graph.get_operations() if op.type == "EnsureShape"]
    assert checks == ["x"]


def test_a_tight_dataset_gets_no_check_op():
    x, y = make_regression_data(12)
    trainer = train_linear([], data=tf.data.Dataset.from_tensor_slices((x, y)).batch(4),
                           max_epoch=1)
    assert not [op for op in trainer.graph.get_operations() if op.type == "EnsureShape"]


def test_a_fixed_batch_size_in_inputs_suggests_drop_remainder(tfloop_log):
    class FixedBatch(LinearModel):
        def inputs(self):
            return [tf.TensorSpec([4, 3], tf.float32, "x"), tf.TensorSpec([4], tf.float32, "y")]

    x, y = make_regression_data(10)
    # x and y are both checked; either may be the one that reports the short last batch.
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[2(,3)?\] is not compatible "
                                                             r"with expected shape \[4(,3)?\]"):
        train_linear([], model=FixedBatch(), data=tf.data.Dataset.from_tensor_slices(
            (x, y)).batch(4), max_epoch=1)
    assert any("batch the dataset with drop_remainder=True" in m for _, m in tfloop_log)
    trainer = train_linear([], model=FixedBatch(), data=tf.data.Dataset.from_tensor_slices(
        (x, y)).batch(4, drop_remainder=True), max_epoch=2)
    assert trainer.global_step == 4


def test_fed_float64_values_are_noted_once_like_a_dataset(tfloop_log):
    class Named(LinearModel):
        # Input names of its own: the note for fed values is logged once per process and name.
        def inputs(self):
            return [tf.TensorSpec([None, 3], tf.float32, "fed_x"),
                    tf.TensorSpec([None], tf.float32, "fed_y")]

    x, y = make_regression_data(12)
    wide = [(bx.astype(np.float64), by) for bx, by in batches(x, y, 4)]
    trainer = train_linear([], model=Named(), data=tfloop.FeedInput(wide), max_epoch=2)
    assert trainer.global_step == 6
    assert [m for _, m in tfloop_log if m.startswith("FeedInput: input fed_")] == [
        ("FeedInput: input fed_x is fed float64 values, cast to float32 as inputs() declares (a "
        "safe cast; this note is logged once).")]


def test_components_of_different_batch_sizes_are_refused_before_training():
    x, y = np.zeros((4, 3), np.float32), np.zeros(2, np.float32)
    with pytest.raises(ValueError, match=r"FeedInput datapoint 0: the inputs have different batch "
                                         r"sizes \(x: 4, y: 2\)"):
        train_linear(data=tfloop.FeedInput([[x, y]]))
    dataset = tf.data.Dataset.zip((tf.data.Dataset.from_tensor_slices(np.zeros((8, 3), np.float32))
                                   .batch(4, drop_remainder=True),
                                   tf.data.Dataset.from_tensor_slices(np.zeros(8, np.float32))
                                   .batch(2, drop_remainder=True)))
    with pytest.raises(ValueError, match=r"dataset elements: the inputs have different batch "
                                         r"sizes \(x: 4, y: 2\)"):
        train_linear(data=dataset)
