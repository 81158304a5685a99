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
from support import LinearModel, make_regression_data

import tfloop
from tfloop.compat import tf
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def make_passes():
    """Data of unknown length whose passes differ: 24 datapoints reshuffled each pass, in
    batches of 3, only the batches whose targets sum above 0."""
    x, y = make_regression_data(24)
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(24, seed=7).batch(3).filter(
        lambda bx, by: tf.reduce_sum(by) > 0)


class EpochEnds(tfloop.Callback):
    """The global step at the end of each epoch, and each epoch's expected length."""

    _chief_only = False

    def __init__(self):
        self.ends, self.expected = [], []

    def _before_epoch(self):
        self.expected.append(self.trainer.expected_steps_per_epoch)

    def _after_epoch(self):
        self.ends.append(self.global_step)


@pytest.mark.slow   # five trainings
def test_a_run_of_passes_resumes_step_exactly_within_a_pass_and_at_its_end(tmp_path):
    ends = EpochEnds()
    _, reference, _ = train(str(tmp_path / "reference"), make_data=make_passes, extra=[ends])
    lengths = [b - a for a, b in zip([0] + ends.ends, ends.ends)]
    assert len(set(lengths)) > 1 and ends.expected == [None] + lengths[:-1]
    for name, stop in (("within", ends.ends[1] - 1), ("at-end", ends.ends[1])):
        logdir = str(tmp_path / name)
        train(logdir, make_data=make_passes, extra=[StopAt(stop)])
        resumed = EpochEnds()
        config, weights, _ = train(logdir, make_data=make_passes, extra=[resumed])
        assert (config.starting_epoch, config.starting_local_step) == (2, stop - ends.ends[0])
        assert resumed.ends == ends.ends[1:] and resumed.expected == ends.expected[1:]
        assert weights.after_step == [s for s in reference.after_step if s[0] > stop]
        assert weights.final.tobytes() == reference.final.tobytes()


@pytest.mark.slow
def test_a_run_of_passes_cannot_resume_from_a_checkpoint_without_its_state(tmp_path):
    logdir = str(tmp_path / "log")
    train(logdir, make_data=make_passes, extra=[StopAt(3)])
    for name in os.listdir(logdir):   # checkpoints as a run without resume states leaves them
        if name.endswith((".resume.json", ".iterator")):
            os.remove(os.path.join(logdir, name))
    prefix = find_resume_checkpoint(logdir)
    message = (
        f"{prefix} has no resume state, and this run's epochs are passes over data of unknown "
        "length: where its global step 3 falls in them cannot be told. Give steps_per_epoch to "
        "continue with epochs of that many steps, or resume from a checkpoint with a resume "
        "state written by a run without steps_per_epoch (AutoResumeTrainConfig writes them).")
    for resume in (lambda: train(logdir, make_data=make_passes),
                   lambda: train_passes_without_a_config(logdir, prefix)):
        with pytest.raises(ValueError) as info:
            resume()
        assert str(info.value) == message


def train_passes_without_a_config(logdir, resume_from):
    logger.set_logger_dir(logdir, action="keep")
    model, trainer = LinearModel(), tfloop.SimpleTrainer()
    try:
        trainer.setup_graph(model.get_input_signature(), tfloop.DatasetInput(make_passes),
                            model.build_graph, model.get_optimizer)
        trainer.train_with_defaults(extra_callbacks=[], monitors=[], max_epoch=2,
                                    resume_from=resume_from)
    finally:
        logger.unset_logger_dir()
