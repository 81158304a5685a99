"""Floats for an integer input (issue 33): taken when every value is a whole number the input's
dtype holds, as TensorFlow 1's feed took them (HED's 0/1 edge maps into an int32 input), in every
input source and predictor; a value the cast would change (0.5, nan, inf, out of range) is refused
naming the source, the input, the value and the dtype."""
import numpy as np
import pytest
from support import make_regression_data

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.utils.integral import first_changed_value


class Classifier(tfloop.ModelDesc):
    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.int32, "label")]

    def build_graph(self, x, label):
        w = tfv1.get_variable("w", [3, 4], initializer=tfv1.zeros_initializer())
        logits = tf.identity(tf.matmul(x, w), name="logits")
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=label, logits=logits), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.5)


class Costs(tfloop.Callback):
    def __init__(self):
        self.costs, self.labels = [], []

    def _setup_graph(self):
        self.tensors = self.get_tensors_maybe_in_tower(["cost", "label"])

    def _before_run(self, ctx):
        return self.tensors

    def _after_run(self, ctx, values):
        cost, label = values.results
        self.costs.append(float(cost))
        self.labels.append(label.dtype.name)


def _batches(label_dtype, bad=None):
    x, _ = make_regression_data(12)
    labels = (np.arange(12) % 4).astype(label_dtype)
    if bad is not None:
        labels[5] = bad
    return [[x[i:i + 4], labels[i:i + 4]] for i in range(0, 12, 4)]


def _generator_dataset(label_dtype, bad=None):
    data = _batches(label_dtype, bad)
    return tf.data.Dataset.from_generator(lambda: (tuple(b) for b in data), output_signature=(
        tf.TensorSpec([None, 3], tf.float32), tf.TensorSpec([None], tf.as_dtype(label_dtype))))


SOURCES = {
    "FeedInput": lambda dtype, bad=None: tfloop.FeedInput(_batches(dtype, bad)),
    "QueueInput": lambda dtype, bad=None: tfloop.QueueInput(_batches(dtype, bad)),
    "StagingInput": lambda dtype, bad=None: tfloop.StagingInput(
        tfloop.QueueInput(_batches(dtype, bad))),
    "DatasetInput": lambda dtype, bad=None: tfloop.DatasetInput(_generator_dataset(dtype, bad)),
    "DatasetInput of a DataFlow": lambda dtype, bad=None: tfloop.DatasetInput(
        tfloop.DatasetInput.dataflow_to_dataset(tfloop.DataFromList(_batches(dtype, bad),
                                                                    shuffle=False),
                                                [tf.float32, tf.int32])),
}


def _train(source, callbacks=()):
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=Classifier(), data=source, callbacks=list(callbacks), extra_callbacks=[],
        max_epoch=1, steps_per_epoch=3), trainer)
    return trainer


@pytest.mark.parametrize("kind", sorted(SOURCES))
def test_whole_floats_train_an_int32_input_as_the_integers_do(kind):
    with_floats, with_ints = Costs(), Costs()
    _train(SOURCES[kind](np.float64), [with_floats])
    _train(SOURCES[kind](np.int32), [with_ints])
    assert with_floats.costs == with_ints.costs and len(with_ints.costs) == 3
    assert set(with_floats.labels) == {"int32"}


@pytest.mark.parametrize("kind", ["FeedInput", "QueueInput"])
@pytest.mark.parametrize("bad", [0.5, np.nan, np.inf, 2.0 ** 31])
def test_a_float_the_cast_would_change_is_refused_naming_input_value_and_dtype(kind, bad):
    with pytest.raises(ValueError) as info:
        _train(SOURCES[kind](np.float64, bad))
    assert str(info.value) == (
        f"{kind} datapoint 1: input label: int32 (None,) takes floats only when they are whole "
        f"numbers that int32 can hold; got {bad!r}. Round the values (np.rint) if that is what "
        f"you mean, or declare a float input.")


@pytest.mark.parametrize("bad, shown", [(0.5, "0.5"), (np.nan, "nan"),
                                        (-2.0 ** 31 - 1, "-2147483649")])
def test_a_dataset_float_the_cast_would_change_stops_training_naming_it(bad, shown):
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _train(SOURCES["DatasetInput"](np.float64, bad))
    assert ("[DatasetInput: input label: int32 (None,) takes floats only when they are whole "
            f"numbers that int32 can hold; got] [{shown}] [Round the values (np.rint) if that is "
            "what you mean, or declare a float input.]") in str(info.value)


def test_a_dataflow_float_the_cast_would_change_stops_training_naming_it():
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _train(SOURCES["DatasetInput of a DataFlow"](np.float64, 0.5))
    assert ("ValueError: dataflow_to_dataset datapoint 1: input component 1: int32 takes floats "
            "only when they are whole numbers that int32 can hold; got 0.5.") in str(info.value)


def test_dataflow_to_dataset_refuses_bad_types_and_datapoints():
    with pytest.raises(TypeError, match="types must be a list of tf.DType"):
        tfloop.DatasetInput.dataflow_to_dataset(tfloop.DataFromList([[1]]), tf.int32)
    ds = tfloop.DatasetInput.dataflow_to_dataset(tfloop.DataFromList([[1, 2]]), [tf.int32])
    with pytest.raises(tf.errors.InvalidArgumentError, match="datapoint 0 has 2 components, "
                                                              "but types has 1"):
        list(ds)
    assert [int(x[0]) for x in tfloop.DatasetInput.dataflow_to_dataset(
        tfloop.DataFromList([[np.int64(3)]]), [tf.int32])] == [3]


def _predictor(session_init=None):
    config = tfloop.PredictConfig(model=Classifier(), input_names=["label"],
                                  output_names=["label"], session_init=session_init)
    return tfloop.OfflinePredictor(config)


def test_offline_predictor_takes_whole_floats_for_an_int32_input():
    (out,) = _predictor()(np.array([0.0, 3.0, -1.0]))
    assert out.dtype == np.int32 and out.tolist() == [0, 3, -1]


@pytest.mark.parametrize("bad", [0.5, np.nan, -np.inf, 2.0 ** 31])
def test_predictors_refuse_a_float_the_cast_would_change(bad):
    with pytest.raises(ValueError) as info:
        _predictor()(np.array([1.0, bad]))
    assert str(info.value) == (
        f"OfflinePredictor(label:0): input 'label:0' expects int32 [None], got the value {bad!r}; "
        f"it takes floats only when they are whole numbers that int32 can hold. Round the values "
        f"(np.rint) if that is what you mean.")


class PredictAfterTraining(tfloop.Callback):
    """Calls the trainer's predictor with whole floats and with a fraction for ``label``."""

    def _setup_graph(self):
        self.predict = self.trainer.get_predictor(["x", "label"], ["logits", "label"])

    def _after_train(self):
        x, _ = make_regression_data(2)
        self.whole = self.predict(x, np.array([2.0, 1.0], np.float32))
        try:
            self.predict(x, np.array([1.5, 1.0]))
        except ValueError as e:
            self.refusal = str(e)


def test_a_trainers_online_predictor_takes_whole_floats():
    predictor = PredictAfterTraining()
    _train(SOURCES["FeedInput"](np.int32), [predictor])
    logits, label = predictor.whole
    assert label.tolist() == [2, 1] and label.dtype == np.int32 and logits.shape == (2, 4)
    assert "got the value 1.5; it takes floats only when" in predictor.refusal


@pytest.mark.parametrize("values, dtype, first", [
    ([0.0, 1.0, -3.0], np.int8, None), ([127.0, 128.0], np.int8, 128.0),
    ([-128.0, -129.0], np.int8, -129.0), ([255.0, -1.0], np.uint8, -1.0),
    ([2.0 ** 63], np.int64, 2.0 ** 63), ([2.0 ** 62, 1e30], np.int64, 1e30),
    ([np.float32(2.5)], np.int32, 2.5),
])
def test_first_changed_value(values, dtype, first):
    assert first_changed_value(np.array(values), dtype) == first
