"""ResumeStateSaver: no work per step; it saves through the trainer's checkpoint listeners."""
import os

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
