"""WandbMonitor in W&B's offline mode, read back from the offline run files."""
import numpy as np
import pytest
from support import LinearModel, batches, make_regression_data
from wandb_support import OfflineRun, offline_runs

import tfloop
from tfloop.monitors.wandb_monitor import check_project


@pytest.mark.parametrize("project,match", [
    ("my/project", r"'my/project' contains /; .* e.g. 'my-project'"),
    ("a:b?c", r"'a:b\?c' contains : \?"),
    ("x" * 129, "is longer than 128 characters"),
])
def test_an_illegal_project_name_is_an_error_naming_it(project, match):
    with pytest.raises(ValueError, match=match):
        check_project(project)
    with pytest.raises(ValueError, match=match):
        tfloop.WandbMonitor(project)


def test_id_and_resume_are_the_monitors_own():
    with pytest.raises(TypeError, match="WandbMonitor sets id and resume itself"):
        tfloop.WandbMonitor("p", resume="must", id="abc")


class PutStepAndImage(tfloop.Callback):
    """Puts ``step`` after every step, an image at each epoch's end, and raises after step
    ``fail_at``."""

    _chief_only = False

    def __init__(self, fail_at=None):
        self.fail_at = fail_at

    def _trigger_step(self):
        self.trainer.monitors.put_scalar("step", self.global_step)
        if self.global_step == self.fail_at:
            raise RuntimeError("boom")

    def _trigger(self):
        self.trainer.monitors.put_image("weights", np.full([2, 4, 4, 3], self.epoch_num / 4))


def train(callbacks, max_epoch=3):
    x, y = make_regression_data(12)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.FeedInput(batches(x, y, 4)), max_epoch=max_epoch,
        callbacks=[tfloop.ModelSaver()] + callbacks, extra_callbacks=[],
        monitors=[tfloop.WandbMonitor("tfloop-test", name="linear", config={"lr": 0.1})])
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())


@pytest.mark.slow
def test_offline_run_failed_then_resumed_into_the_same_run(logdir, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    with pytest.raises(RuntimeError, match="boom"):
        train([PutStepAndImage(fail_at=5)])
    train([PutStepAndImage()])
    import wandb
    wandb.teardown()  # W&B's service may still be writing the last run's file (with media)
    first, second = (OfflineRun(path) for path in offline_runs(logdir))
    assert first.run.run_id == second.run.run_id
    assert (first.run.project, first.run.display_name) == ("tfloop-test", "linear")
    assert first.config["lr"] == 0.1
    assert (first.exit_code, second.exit_code) == (1, 0)
    # The first run logged steps 1-5 (5 in after_train); the second resumed from the
    # checkpoint of step 3 and logs from step 6 on.
    assert first.scalars("step") == [(s, s) for s in range(1, 6)]
    assert second.scalars("step") == [(s, s) for s in range(6, 10)]
    images = [(step, row["weights/_type"], row["weights/count"])
              for run in (first, second) for step, row in run.history if "weights/_type" in row]
    assert images == [(3, "images/separated", 2), (6, "images/separated", 2),
                      (9, "images/separated", 2)]
