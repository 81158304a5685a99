"""Trainer: the read-only state that callbacks use (model, input source, optimizer, rank), and
the checkpoint listeners, which get each checkpoint once its trigger round is over."""
import types

import pytest
from support import LinearModel, make_regression_data

import tfloop
from tfloop.compat import tf, tfv1


class SeeState(tfloop.Callback):
    """What the trainer's public attributes are in setup_graph and in before_train."""

    def _setup_graph(self):
        self.at_setup = self.state()

    def _before_train(self):
        self.at_start = self.state()

    def state(self):
        t = self.trainer
        return t.model, t.input_source, t.optimizer, t.rank, t.num_workers


def test_model_input_source_optimizer_rank_and_workers_are_public_and_read_only():
    x, y = make_regression_data(12)
    model, data = LinearModel(), tfloop.DatasetInput(
        lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4))
    seen, trainer = SeeState(), tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=model, data=data, callbacks=[seen], monitors=[], extra_callbacks=[], max_epoch=1),
        trainer)
    assert seen.at_setup == seen.at_start
    got_model, got_input, optimizer, rank, workers = seen.at_start
    assert got_model is model and got_input is data
    assert isinstance(optimizer, tfv1.train.GradientDescentOptimizer)
    assert (rank, workers) == (0, 1)
    for name in ("model", "input_source", "optimizer", "rank", "num_workers"):
        with pytest.raises(AttributeError):
            setattr(trainer, name, None)


def test_rank_and_num_workers_come_from_the_cluster_task():
    trainer = tfloop.SimpleTrainer()
    trainer.task = types.SimpleNamespace(task_index=2, num_workers=3)
    assert (trainer.rank, trainer.num_workers) == (2, 3)



def test_checkpoints_reach_the_listeners_when_announced_in_the_order_saved():
    trainer = tfloop.SimpleTrainer()
    seen, also = [], []
    trainer.checkpoint_listeners.extend([seen.append, also.append])
    trainer.checkpoint_saved("log/model-2")
    trainer.checkpoint_saved("log/model-4")
    assert seen == []                               # the trigger round is not over yet
    trainer.announce_checkpoints()
    trainer.announce_checkpoints()                  # each checkpoint once
    assert seen == also == ["log/model-2", "log/model-4"]


def test_a_stop_request_is_the_loops():
    trainer = tfloop.SimpleTrainer()
    assert not trainer.stop_requested
    trainer.request_stop("SIGTERM received")
    assert trainer.stop_requested and trainer.loop.stop_reason == "SIGTERM received"


class SeesItsGraphFirst(tfloop.SimpleTrainer):
    def __init__(self):
        self.graph_before_init = self.graph         # the metaclass made it already
        self.default_in_init = tfv1.get_default_graph()
        super().__init__()


def test_the_trainers_graph_is_made_before_any_constructor_and_kept():
    trainer = SeesItsGraphFirst()
    assert trainer.graph is trainer.graph_before_init is trainer.default_in_init


def test_the_callbacks_of_a_kind_are_found_inside_wrappers_in_calling_order(tmp_path):
    inner, last = tfloop.ModelSaver(checkpoint_dir=str(tmp_path)), tfloop.ModelSaver(
        checkpoint_dir=str(tmp_path / "other"))
    wrapped = tfloop.PeriodicTrigger(inner, every_k_epochs=2)
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(1, 0.05)])
    trainer = tfloop.SimpleTrainer()
    trainer.register_callback([wrapped, setter, last])
    assert trainer.callbacks_of(tfloop.ModelSaver) == [inner, last]
    assert trainer.callbacks_of(tfloop.HyperParamSetter) == [setter]
    assert trainer.callbacks_of(tfloop.Callback) == [wrapped, inner, setter, last]
    assert trainer.callbacks_of(tfloop.EarlyStopping) == []
