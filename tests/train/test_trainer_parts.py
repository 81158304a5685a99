"""The trainer is made of parts it owns: no tfloop base class beneath ``Trainer``, tensorpack's
public chain above it, and the names users and callbacks read answered by the parts."""
import inspect

import pytest
from support import LinearModel, make_regression_data

import tfloop
from tfloop.compat import tf
from tfloop.train.base import Trainer
from tfloop.train.callback_list import RunCallbacks
from tfloop.train.final_weights import FinalWeights
from tfloop.train.logdir import RunLogDir
from tfloop.train.loop import TrainLoop
from tfloop.train.options import TrainerOptions
from tfloop.train.run_state import RunResume, SavedCheckpoints
from tfloop.utils.part_attribute import PartAttribute

# tensorpack's chains (tensorpack/train/trainers.py, tower.py, base.py)
TENSORPACK_CHAIN_LENGTH = {
    "SimpleTrainer": 4, "QueueInputTrainer": 5, "NoOpTrainer": 4,
    "SyncMultiGPUTrainerReplicated": 4, "SyncMultiGPUTrainerParameterServer": 4,
    "AsyncMultiGPUTrainer": 4,
}


def tfloop_classes(cls):
    return [c for c in cls.__mro__ if c.__module__.startswith("tfloop.")]


def test_the_trainer_derives_from_nothing_of_tfloops():
    assert Trainer.__bases__ == (object,)


@pytest.mark.parametrize("name", sorted(TENSORPACK_CHAIN_LENGTH))
def test_the_public_chain_is_at_most_tensorpacks(name):
    chain = tfloop_classes(getattr(tfloop, name))
    assert chain[-1] is Trainer
    assert len(chain) <= TENSORPACK_CHAIN_LENGTH[name], [c.__name__ for c in chain]


def test_each_concern_is_a_part_the_trainer_owns():
    trainer = tfloop.SimpleTrainer()
    parts = {"loop": TrainLoop, "callback_list": RunCallbacks, "run_options": TrainerOptions,
             "log_directory": RunLogDir, "checkpoints": SavedCheckpoints, "resume": RunResume,
             "final": FinalWeights}
    for attribute, kind in parts.items():
        assert type(getattr(trainer, attribute)) is kind, attribute
    declared = {name: a for name, a in vars(Trainer).items() if isinstance(a, PartAttribute)}
    for name, attribute in declared.items():
        assert repr(attribute).split("(")[1].split(".")[0] in parts, name


def test_the_parts_answer_the_public_names_and_refuse_writes_to_read_only_ones(tmp_path):
    trainer = tfloop.SimpleTrainer()
    trainer.loop.global_step, trainer.loop.epoch_num = 7, 2
    assert (trainer.global_step, trainer.epoch_num) == (7, 2)
    trainer.logdir = tmp_path
    assert trainer.log_directory.logdir == trainer.logdir == str(tmp_path)
    trainer.keep_final_weights = False
    assert trainer.final.keep is False
    with pytest.raises(AttributeError, match=r"global_step is read-only: it is loop.global_step"):
        trainer.global_step = 3
    assert trainer.steps_per_epoch == 1       # an unconfigured loop's epoch
    assert inspect.getdoc(Trainer.is_last_step) == inspect.getdoc(TrainLoop.is_last_step)


def test_a_training_is_seen_the_same_through_the_trainer_and_its_parts(tmp_path):
    class Sees(tfloop.Callback):
        def _trigger_step(self):
            t = self.trainer
            self.seen.append((t.epoch_num, t.local_step, t.global_step,
                              t.loop.epoch_num, t.loop.local_step, t.loop.global_step))

    x, y = make_regression_data(16)
    sees = Sees()
    sees.seen = []
    trainer = tfloop.SimpleTrainer()
    trainer.logdir = tmp_path
    tfloop.launch_train_with_config(tfloop.TrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(
            lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(8)),
        callbacks=[sees, tfloop.ModelSaver()], monitors=[], extra_callbacks=[], max_epoch=2),
        trainer)
    assert sees.seen == [(1, 0, 1) * 2, (1, 1, 2) * 2, (2, 0, 3) * 2, (2, 1, 4) * 2]
    assert trainer.callbacks_of(tfloop.ModelSaver) == trainer.callback_list.of(tfloop.ModelSaver)
    assert trainer.training_ended and "w" in trainer.final_weights
