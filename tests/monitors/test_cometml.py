"""CometMLMonitor, against a recording stand-in for comet_ml.Experiment."""
import numpy as np
import pytest
from support import train_linear

from tfloop import Callback, CometMLMonitor


class RecordingExperiment:
    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
        return record


class PutImage(Callback):
    def _trigger_epoch(self):
        self.trainer.monitors.put_image("img", np.zeros([1, 2, 2, 3], np.uint8))
        self.trainer.monitors.put_scalar("x", float(self.epoch_num))


def test_logs_scalars_images_epochs_and_ends():
    exp = RecordingExperiment()
    train_linear([PutImage()], monitors=[CometMLMonitor(exp)], max_epoch=2)
    names = [c[0] for c in exp.calls]
    assert names[:2] == ["log_dependency", "set_model_graph"]
    assert names[-1] == "end"
    assert [c[1][0] for c in exp.calls if c[0] == "log_epoch_end"] == [1, 2]
    assert [c[2]["name"] for c in exp.calls if c[0] == "log_image"] == ["img_step3", "img_step6"]
    metrics = [(c[1], c[2]) for c in exp.calls if c[0] == "log_metric"]
    assert metrics == [(("x", 1.0), {"step": 3}), (("x", 2.0), {"step": 6})]


def test_an_experiment_excludes_other_arguments():
    with pytest.raises(ValueError, match="give no tags"):
        CometMLMonitor(RecordingExperiment(), tags=["a"])
