"""SingleCostTrainer (a tensorpack-style custom trainer), QueueInputTrainer, DEFAULT_CALLBACKS."""
import numpy as np
import pytest
from support import LinearModel, RecordingCallback, batches, make_regression_data, train_linear

import tfloop
from tfloop import (
    DEFAULT_CALLBACKS,
    DEFAULT_MONITORS,
    QueueInput,
    QueueInputTrainer,
    SingleCostTrainer,
    TowerContext,
)
from tfloop.compat import tfv1
from tfloop.tfutils.common import get_global_step_var


class TensorpackStyleTrainer(SingleCostTrainer):
    """Sets train_op itself and returns its callbacks, as tensorpack trainers do."""

    def __init__(self, callbacks):
        super().__init__()
        self.extra = callbacks
        self.optimizers = []

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        with TowerContext("", is_training=True):
            grads = self._make_get_grad_fn(input, get_cost_fn, get_opt_fn)()
        self.optimizers = [get_opt_fn(), get_opt_fn()]
        self.train_op = get_opt_fn().apply_gradients(grads, global_step=get_global_step_var(),
                                                     name="train_op")
        return self.extra


class ReturnsTheOp(SingleCostTrainer):
    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        with TowerContext("", is_training=True):
            grads = self._make_get_grad_fn(input, get_cost_fn, get_opt_fn)()
        return get_opt_fn().apply_gradients(grads, global_step=get_global_step_var())


@pytest.mark.parametrize("make", [
    lambda log: TensorpackStyleTrainer([RecordingCallback("cb", log)]),
    lambda log: ReturnsTheOp()])
def test_custom_single_cost_trainer_trains_like_simple_trainer(make):
    log = []
    weights = []

    class Capture(tfloop.Callback):
        def _after_train(self):
            weights.append(self.trainer.sess.run(tfv1.get_collection("variables", "w")[0]))

    trainer = train_linear([Capture()], trainer=make(log), max_epoch=2)
    train_linear([Capture()], max_epoch=2)
    np.testing.assert_allclose(weights[0], weights[1], rtol=1e-6)
    assert trainer.global_step == 6
    if isinstance(trainer, TensorpackStyleTrainer):
        assert trainer.optimizers[0] is trainer.optimizers[1]
        assert ("cb", "before_train") in [entry[:2] for entry in log]


def test_a_setup_graph_without_a_train_op_is_an_error():
    class Forgetful(SingleCostTrainer):
        def _setup_graph(self, input, get_cost_fn, get_opt_fn):
            return []

    with pytest.raises(TypeError, match="must return the training op or set self.train_op"):
        train_linear(trainer=Forgetful())


def test_queue_input_trainer_takes_only_a_queue_input():
    x, y = make_regression_data(12)
    trainer = train_linear(data=QueueInput(batches(x, y, 4)), trainer=QueueInputTrainer(),
                           steps_per_epoch=3, max_epoch=1)
    assert trainer.global_step == 3
    with pytest.raises(TypeError, match="QueueInputTrainer trains from a QueueInput"):
        train_linear(trainer=QueueInputTrainer())


def test_default_callbacks_and_monitors_under_tensorpack_names():
    assert [type(c).__name__ for c in DEFAULT_CALLBACKS()] == [
        "MovingAverageSummary", "ProgressBar", "MergeAllSummaries", "RunUpdateOps"]
    assert [type(m).__name__ for m in DEFAULT_MONITORS()] == [
        "TFEventWriter", "JSONWriter", "ScalarPrinter"]


def test_register_callback_takes_a_list_as_tensorpack_does():
    log = []
    trainer = tfloop.SimpleTrainer()
    callbacks = [RecordingCallback("a", log), RecordingCallback("b", log)]
    assert trainer.register_callback(callbacks) is True
    assert trainer.callbacks == callbacks


class BuildsInConstructor(tfloop.TowerTrainer):
    """tensorpack's GAN trainers build the whole model in __init__."""

    def __init__(self, source, model):
        super().__init__()
        self.register_callback(source.setup(model.get_input_signature()))
        self._input_source = source
        self.tower_func = tfloop.TowerFunc(model.build_graph, source.input_signature)
        with TowerContext("", is_training=True):
            cost = self.tower_func(*source.get_input_tensors())
        self.train_op = model.get_optimizer().minimize(cost, global_step=get_global_step_var())


def test_a_trainer_building_in_its_constructor_builds_in_its_own_graph():
    x, y = make_regression_data(12)
    trainer = BuildsInConstructor(tfloop.FeedInput(batches(x, y, 4)), LinearModel())
    assert trainer.train_op.graph is trainer.graph
    assert tfv1.get_default_graph() is not trainer.graph
    trainer.train_with_defaults(extra_callbacks=[], monitors=[], max_epoch=2)
    assert trainer.global_step == 6
