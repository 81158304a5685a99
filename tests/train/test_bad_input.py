"""Bad input gets a clear error that names the problem, before training starts."""
import os

import numpy as np
import pytest
from support import LinearModel, RecordingCallback, batches, make_regression_data, train_linear

import tfloop
from tfloop.compat import tf, tfv1


class NonScalarCost(LinearModel):
    def build_graph(self, x, y):
        super().build_graph(x, y)
        return tf.square(tf.squeeze(tf.matmul(x, tfv1.get_variable("v", [3, 1])), 1) - y)


class NotSpecs(LinearModel):
    def inputs(self):
        return [([None, 3], tf.float32)]


class KerasOptimizer(LinearModel):
    def optimizer(self):
        return "adam"


class NoTrainableVars(LinearModel):
    def build_graph(self, x, y):
        return tf.reduce_mean(y)


def test_cost_not_a_scalar():
    with pytest.raises(ValueError, match=r"The cost must be a scalar, got .* with shape \(None,\)"):
        train_linear([], model=NonScalarCost())


def test_inputs_not_tensorspecs():
    with pytest.raises(TypeError, match=r"inputs\(\) must return a list of tf.TensorSpec; item 0"):
        train_linear([], model=NotSpecs())


def test_optimizer_not_a_v1_optimizer():
    with pytest.raises(TypeError,
                       match=r"must return a tf.compat.v1.train.Optimizer .* got 'adam'"):
        train_linear([], model=KerasOptimizer())


def test_cost_without_trainable_variables():
    with pytest.raises(ValueError, match="does not depend on any trainable variable"):
        train_linear([], model=NoTrainableVars())


def test_a_callback_that_is_not_a_callback():
    with pytest.raises(TypeError, match=r"callbacks must be a list of Callback; got 'ModelSaver'"):
        train_linear(["ModelSaver"])


def test_unknown_tensor_name_lists_close_matches():
    with pytest.raises(KeyError, match=r"No tensor or op named 'cots'.*Close matches: cost"):
        train_linear([tfloop.ProcessTensors(["cots"], print)])


@pytest.mark.parametrize("steps", [0, -3])
def test_steps_per_epoch_not_positive(steps):
    with pytest.raises(ValueError, match=f"steps_per_epoch must be a positive int, got {steps}"):
        train_linear([], steps_per_epoch=steps)


def test_steps_per_epoch_not_an_int():
    with pytest.raises(TypeError, match="steps_per_epoch must be an int, got 'two'"):
        train_linear([], steps_per_epoch="two")


def test_max_epoch_may_be_a_whole_float_as_in_tensorpack():
    # tensorpack's FasterRCNN computes max_epoch with // on floats.
    assert train_linear([], max_epoch=2.0).global_step == 6
    assert train_linear([], max_epoch=np.float32(1.0)).global_step == 3


def test_a_fraction_is_truncated_as_tensorpack_did_with_a_warning(log_warnings):
    # steps_per_epoch = num_examples / batch_size is a float in Python 3; tensorpack's int()
    # truncated it, and so does tfloop, saying so since the value changes.
    assert train_linear([], steps_per_epoch=2.5, max_epoch="2").global_step == 4
    assert log_warnings == ["steps_per_epoch is 2.5, not a whole number: it is taken as 2, as "
                            "tensorpack's int() took it; pass 2 (or the int you mean) to silence "
                            "this."]


def test_max_epoch_below_starting_epoch():
    with pytest.raises(ValueError, match=r"max_epoch \(2\) must be >= starting_epoch \(5\)"):
        train_linear([], starting_epoch=5, max_epoch=2)


def test_before_run_returning_something_unusable():
    class Bad(tfloop.Callback):
        def _before_run(self, ctx):
            return 42

    log = []
    with pytest.raises(TypeError, match=r"Bad._before_run returned 42 \(int\)"):
        train_linear([Bad(), RecordingCallback("rec", log)], max_epoch=1)
    assert log[-1][1] == "after_train"


def test_same_callback_twice():
    cb = tfloop.Callback()
    with pytest.raises(ValueError, match="appears twice"):
        train_linear([cb, cb])


def unwritable_dir(tmp_path):
    """A directory this process cannot create files in: read-only for a normal user; for root
    (who ignores permissions) a path on the read-only /sys filesystem."""
    if os.geteuid() == 0:
        return "/sys/tfloop-test-log-dir"
    target = tmp_path / "readonly"
    target.mkdir()
    target.chmod(0o500)
    return str(target / "run")


def test_log_dir_not_writable(tmp_path):
    with pytest.raises(PermissionError, match="Cannot create log directory|not writable"):
        tfloop.logger.set_logger_dir(unwritable_dir(tmp_path))
    assert tfloop.logger.get_logger_dir() is None


def test_log_dir_that_is_a_file(tmp_path):
    path = tmp_path / "file"
    path.write_text("x")
    with pytest.raises(FileExistsError, match="is not a directory"):
        tfloop.logger.set_logger_dir(str(path))


def test_feeding_a_tensor_twice():
    x, y = make_regression_data(12)

    class FeedX(tfloop.Callback):
        def _setup_graph(self):
            self.x = self.trainer.input_source.placeholders[0]

        def _before_run(self, ctx):
            return tfv1.train.SessionRunArgs(fetches=None, feed_dict={self.x: x[:4]})

    with pytest.raises(ValueError, match="FeedX feeds x:0 which is already fed"):
        train_linear([FeedX()], data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=1)


def test_launch_needs_a_config_and_a_trainer():
    with pytest.raises(TypeError, match="needs a TrainConfig"):
        tfloop.launch_train_with_config({"model": LinearModel()}, tfloop.SimpleTrainer())
    config = tfloop.TrainConfig(model=LinearModel(), data=[(1, 2)], steps_per_epoch=1)
    with pytest.raises(TypeError, match=r"needs a tfloop trainer \(e.g. SimpleTrainer\(\)\)"):
        tfloop.launch_train_with_config(config, "SimpleTrainer")


def test_config_rejects_a_model_that_is_not_a_model_desc():
    with pytest.raises(TypeError, match="model must be a ModelDesc"):
        tfloop.TrainConfig(model=object(), data=[(1, 2)])


@pytest.mark.parametrize("wrap", [lambda cb: cb, lambda cb: tfloop.PeriodicTrigger(
    cb, every_k_steps=2)])
def test_a_callback_reused_for_a_second_training_is_refused(logdir, wrap):
    saver = tfloop.ModelSaver()
    train_linear([wrap(saver)], max_epoch=1)
    assert saver.last_checkpoint == os.path.join(logdir, "model-3")
    with pytest.raises(ValueError, match=r"Callback ModelSaver was already used by another "
                                         r"training \(trainer SimpleTrainer\).*Create new callback "
                                         r"objects for each training"):
        train_linear([wrap(saver)], max_epoch=1)


def test_numpy_integers_are_accepted_as_loop_bounds():
    import numpy as np
    trainer = train_linear(steps_per_epoch=np.int64(3), max_epoch=np.int32(2))
    assert trainer.global_step == 6 and type(trainer.loop.max_epoch) is int


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(session_config="gpu"), TypeError,
     "session_config must be a tf.compat.v1.ConfigProto, got 'gpu'"),
    (dict(session_creator=42), TypeError,
     r"session_creator must have a create_session\(graph\) method"),
    (dict(data=[]), ValueError, "The data QueueInput is empty: it has no datapoints"),
    (dict(data="file.tfrecord"), TypeError,
     r"data='file.tfrecord' is a path, not data: .*tf.data.TFRecordDataset\('file.tfrecord'\)"),
])
def test_bad_config_values_are_refused_before_building(kwargs, error, message):
    with pytest.raises(error, match=message):
        tfloop.TrainConfig(model=LinearModel(), **dict(dict(data=[(1, 2)]), **kwargs))


class StringLearningRate(LinearModel):
    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer("0.1")


def test_a_learning_rate_given_as_a_string_is_refused_when_the_train_op_is_built():
    with pytest.raises(TypeError, match=r"GradientDescentOptimizer got the learning rate '0.1' "
                                        r"\(str\); give a number"):
        train_linear(model=StringLearningRate())


def _dataset(transform):
    x, y = make_regression_data(8)
    return lambda: transform(tf.data.Dataset.from_tensor_slices((x, y)).batch(4))


@pytest.mark.parametrize("data, message", [
    (tfloop.DatasetInput(_dataset(lambda ds: ds), repeat=False),
     r"The input DatasetInput ran out at step 2 of epoch 1 \(global step 2\), before the epoch's "
     r"steps_per_epoch=3 steps: it is not repeated"),
    (tfloop.DatasetInput(_dataset(lambda ds: ds.filter(lambda x, y: False))),
     r"^The input DatasetInput \(its pipeline: from_tensor_slices > batch > filter\) yielded no "
     r"batch in epoch 1: its data is empty"),
    (tfloop.DatasetInput(_dataset(lambda ds: ds.filter(lambda x, y: False)), repeat=False),
     "The input DatasetInput yielded no data at the first step: it is empty"),
])
def test_an_input_that_runs_out_is_named(data, message):
    with pytest.raises(ValueError, match=message):
        train_linear(data=data, steps_per_epoch=3)


def test_an_empty_dataset_without_steps_per_epoch_is_reported_as_empty():
    with pytest.raises(ValueError, match="The input DatasetInput is an empty dataset: it has no "
                                         "elements to train on"):
        train_linear(data=tfloop.DatasetInput(_dataset(lambda ds: ds.take(0))))
