"""The trainer owns the run's state: a config only names the checkpoint, and
``train(resume_from=)`` continues that checkpoint's run, whichever way the run was assembled."""
import json
import os

import pytest
from resume_support import (
    STEPS_PER_EPOCH,
    StepCounter,
    StopAt,
    WeightLog,
    make_dataset,
    read_stats,
    train,
)
from support import LinearModel

import tfloop
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.utils import logger


def train_without_a_config(logdir, resume_from):
    """resume_support.train's run, through setup_graph + train_with_defaults."""
    logger.set_logger_dir(logdir, action="keep")
    model, data = LinearModel(), tfloop.DatasetInput(make_dataset)
    weights, counter = WeightLog(), StepCounter()
    trainer = tfloop.SimpleTrainer()
    try:
        trainer.setup_graph(model.get_input_signature(), data, model.build_graph,
                            model.get_optimizer)
        trainer.train_with_defaults(
            callbacks=[tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=None),
                                              every_k_steps=2), weights, counter,
                       tfloop.ResumeStateSaver(data)],
            monitors=[tfloop.JSONWriter()], extra_callbacks=[], max_epoch=4,
            resume_from=resume_from)
    finally:
        logger.unset_logger_dir()
    return trainer, weights, counter


def test_train_with_defaults_continues_a_checkpoint_bit_exactly(tmp_path):
    _, reference, _ = train(str(tmp_path / "reference"), max_to_keep=None)
    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(5)])
    trainer, weights, counter = train_without_a_config(logdir, find_resume_checkpoint(logdir))
    assert (trainer.loop.starting_epoch, trainer.loop.starting_local_step) == (2, 2)
    assert counter.at_start == 5 and counter.steps == 12
    assert [step for step, _ in weights.after_step] == list(range(6, 13))
    assert weights.final.tobytes() == reference.final.tobytes()
    assert read_stats(logdir) == read_stats(str(tmp_path / "reference"))


def test_an_already_finished_run_builds_nothing_and_leaves_its_status(tmp_path):
    logdir = str(tmp_path / "log")
    train(logdir, max_epoch=1)
    status = open(os.path.join(logdir, "status.json")).read()
    trainer = tfloop.SimpleTrainer()
    config, _, counter = train(logdir, max_epoch=1, trainer=trainer)
    assert config.finished_epoch == trainer.loop.finished_epoch == 1
    assert trainer.sess is None and trainer.monitors is None and counter.steps == 0
    assert open(os.path.join(logdir, "status.json")).read() == status


def test_the_config_names_the_checkpoint_and_the_trainer_reads_its_state(tmp_path):
    logdir = str(tmp_path / "log")
    train(logdir, extra=[StopAt(STEPS_PER_EPOCH + 2)])
    path = os.path.join(logdir, f"model-{STEPS_PER_EPOCH + 2}.resume.json")
    with open(path, "w") as f:
        f.write("{not json")
    logger.set_logger_dir(logdir, action="keep")

    def config():
        return tfloop.AutoResumeTrainConfig(model=LinearModel(),
                                            data=tfloop.DatasetInput(make_dataset), max_epoch=4)
    # The newest state cannot be read: the config names the checkpoint before it, whose state
    # the trainer then reads (a warning names the file it passed over).
    fallback = config()
    assert fallback.resume_from == os.path.join(logdir, f"model-{STEPS_PER_EPOCH + 1}")
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(fallback, trainer)
    assert (trainer.loop.starting_epoch, trainer.loop.starting_local_step) == (2, 1)
    assert trainer.global_step == 4 * STEPS_PER_EPOCH
    logdir = str(tmp_path / "log2")
    train(logdir, extra=[StopAt(STEPS_PER_EPOCH + 2)])
    logger.set_logger_dir(logdir, action="keep")
    path = os.path.join(logdir, f"model-{STEPS_PER_EPOCH + 2}.resume.json")
    with open(path, "w") as f:
        json.dump({"format": 1, "global_step": 5, "epoch": 2, "local_step": 2,
                   "steps_per_epoch": STEPS_PER_EPOCH, "callbacks": {}, "iterator": None}, f)
    trainer = tfloop.SimpleTrainer()
    tfloop.launch_train_with_config(config(), trainer)
    assert (trainer.loop.starting_epoch, trainer.loop.starting_local_step) == (2, 2)
    assert trainer.global_step == 4 * STEPS_PER_EPOCH


def train_in_its_own_directory(way, logdir, stop_at=None):
    """resume_support.train's run with the log directory given to the run only (``way``:
    ``"config"``, TrainConfig(logdir=); ``"trainer"``, trainer.logdir), no logger directory."""
    assert logger.get_logger_dir() is None
    weights, counter = WeightLog(), StepCounter()
    callbacks = [tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=None), every_k_steps=2),
                 weights, counter] + ([StopAt(stop_at)] if stop_at else [])
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(make_dataset), callbacks=callbacks,
        monitors=[tfloop.JSONWriter()], extra_callbacks=[], max_epoch=4,
        **({"logdir": logdir} if way == "config" else {}))
    trainer = tfloop.SimpleTrainer()
    if way == "trainer":
        trainer.logdir = logdir
    tfloop.launch_train_with_config(config, trainer)
    return config, weights, counter


@pytest.mark.parametrize("way", ["config", "trainer"])
def test_a_run_resumes_from_the_checkpoint_in_its_own_log_directory(tmp_path, way, log_warnings):
    _, reference, _ = train(str(tmp_path / "reference"), max_to_keep=None)
    logdir = str(tmp_path / "log")
    first, _, _ = train_in_its_own_directory(way, logdir, stop_at=5)
    assert first.resume_from is None
    config, weights, counter = train_in_its_own_directory(way, logdir)
    assert config.resume_from == os.path.join(logdir, "model-5")
    assert counter.at_start == 5 and counter.steps == 12
    assert [step for step, _ in weights.after_step] == list(range(6, 13))
    assert weights.final.tobytes() == reference.final.tobytes()
    assert read_stats(logdir) == read_stats(str(tmp_path / "reference"))
    assert not [w for w in log_warnings if "no log directory" in w]
