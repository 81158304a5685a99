"""ResumeStateSaver: no work per step; it saves through the trainer's checkpoint listeners."""
import json
import os

import pytest
from support import LinearModel, batches, make_regression_data

import tfloop
from tfloop.utils import logger


def test_the_resume_state_saver_does_nothing_per_step():
    saver = tfloop.ResumeStateSaver()
    assert not saver.uses_run_hooks() and not saver.uses_step_hook()


def test_every_checkpoint_gets_its_state_through_the_listener(tmp_path):
    logdir = str(tmp_path / "log")
    logger.set_logger_dir(logdir, action="keep")
    x, y = make_regression_data(12)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), monitors=[],
        callbacks=[tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=2)],
        extra_callbacks=[], max_epoch=2)
    try:
        trainer = tfloop.SimpleTrainer()
        tfloop.launch_train_with_config(config, trainer)
    finally:
        logger.unset_logger_dir()
    assert trainer.checkpoint_listeners == [config.state_saver.save]
    assert config.state_saver.written == [os.path.join(logdir, f"model-{step}")
                                          for step in (2, 4, 6)]


class CountsAndCleansUp(tfloop.Callback):
    """A state that changes at every step and in after_train."""

    def __init__(self):
        self.steps, self.cleaned_up = 0, False

    def _trigger_step(self):
        self.steps += 1

    def _after_train(self):
        self.cleaned_up = True

    def _state_dict(self):
        return {"steps": self.steps, "cleaned_up": self.cleaned_up}

    def _load_state_dict(self, state):
        self.steps, self.cleaned_up = state["steps"], state["cleaned_up"]


def resume_states_of_a_run(logdir, order):
    """Train 2 epochs of 3 steps, checkpoints every 2 steps, the callbacks in ``order`` (a
    permutation of "model saver", "resume saver", "counter"); ``{file: resume state}``."""
    x, y = make_regression_data(12)
    data = tfloop.FeedInput(batches(x, y, 4))
    made = {"model saver": tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=None),
                                                  every_k_steps=2),
            "resume saver": tfloop.ResumeStateSaver(data), "counter": CountsAndCleansUp()}
    config = tfloop.TrainConfig(model=LinearModel(), data=data, monitors=[], extra_callbacks=[],
                                callbacks=[made[name] for name in order], max_epoch=2,
                                logdir=logdir)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    states = {}
    for name in sorted(os.listdir(logdir)):
        if name.endswith(".resume.json"):
            with open(os.path.join(logdir, name)) as f:
                states[name] = json.load(f)
    return states


@pytest.mark.slow
def test_the_resume_states_do_not_depend_on_where_the_savers_are_listed(tmp_path):
    orders = [("resume saver", "model saver", "counter"), ("counter", "model saver",
                                                           "resume saver"),
              ("model saver", "counter", "resume saver"), ("resume saver", "counter",
                                                           "model saver")]
    runs = [resume_states_of_a_run(str(tmp_path / str(i)), order)
            for i, order in enumerate(orders)]
    assert sorted(runs[0]) == ["model-2.resume.json", "model-4.resume.json",
                               "model-6.resume.json"]
    assert all(run == runs[0] for run in runs[1:])
    # The final checkpoint's state is the one before after_train, whoever is listed first.
    assert runs[0]["model-6.resume.json"]["callbacks"]["CountsAndCleansUp#0"] == {
        "steps": 6, "cleaned_up": False}
