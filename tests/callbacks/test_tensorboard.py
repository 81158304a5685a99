"""TensorBoard's dashboards from a tfloop run: HParams, histograms, images and the profiler, read
from the event files (tests/callbacks/test_tensorboard_server.py asks a real TensorBoard)."""
import glob
import os

import numpy as np
import pytest
from support import LinearModel, LRModel, train_linear

import tfloop
from tfloop.compat import tf, tfv1


def events(logdir):
    return [e for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*")))
            for e in tfv1.train.summary_iterator(path)]


def values(logdir, plugin=None):
    """``(step, Summary.Value)`` of every summary value in the run (of ``plugin`` if given)."""
    return [(e.step, v) for e in events(logdir) if e.HasField("summary") for v in e.summary.value
            if plugin is None or v.metadata.plugin_data.plugin_name == plugin]


def test_hyper_params_reach_the_hparams_plugin_with_config_setters_and_user_values(logdir):
    from tensorboard.plugins.hparams import api_pb2, metadata
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.05), (1, 0.01)])
    train_linear([setter, tfloop.HyperParams({"batch_size": 4, "opt": "sgd", "wd": np.float32(
        0.5)})], model=LRModel(), max_epoch=2, monitors=[tfloop.TFEventWriter()])
    hparams = values(logdir, "hparams")
    start = metadata.parse_session_start_info_plugin_data(
        hparams[0][1].metadata.plugin_data.content)
    got = {name: getattr(value, value.WhichOneof("kind"))
           for name, value in start.hparams.items()}
    got["learning_rate"] = round(got["learning_rate"], 6)     # a float32 variable's value
    assert got == {"max_epoch": 2.0, "steps_per_epoch": 3.0, "steps_per_run": 1.0,
                   "model": "LRModel",
                   "learning_rate": 0.05, "batch_size": 4.0, "opt": "sgd", "wd": 0.5}
    end = metadata.parse_session_end_info_plugin_data(hparams[-1][1].metadata.plugin_data.content)
    assert end.status == api_pb2.STATUS_SUCCESS and hparams[-1][0] == 6


def test_a_failed_run_ends_its_hparams_session_as_failed(logdir):
    from tensorboard.plugins.hparams import api_pb2, metadata

    class Fail(tfloop.Callback):
        def _trigger(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        train_linear([tfloop.HyperParams(), Fail()], max_epoch=2,
                     monitors=[tfloop.TFEventWriter()])
    end = values(logdir, "hparams")[-1][1]
    assert metadata.parse_session_end_info_plugin_data(
        end.metadata.plugin_data.content).status == api_pb2.STATUS_FAILURE


class ImageModel(LinearModel):
    def build_graph(self, x, y):
        tf.identity(tf.reshape(tf.sigmoid(x), [-1, 1, 3, 1]), name="image")
        return super().build_graph(x, y)


def test_histograms_and_images_with_one_argument_each(logdir):
    train_linear([tfloop.TensorBoardSummaries(histograms=True, images=["image"])],
                 model=ImageModel(), max_epoch=2, monitors=[tfloop.TFEventWriter()],
                 extra_callbacks=[tfloop.MergeAllSummaries()])
    by_tag = {}
    for step, value in values(logdir):
        by_tag.setdefault(value.tag, []).append((step, value.WhichOneof("value")))
    assert by_tag["w/histogram"] == [(3, "histo"), (6, "histo")]
    assert by_tag["image/image/0"] == [(3, "image"), (6, "image")]
    assert len([tag for tag in by_tag if tag.startswith("image/image/")]) == 3


@pytest.mark.parametrize("kwargs, error, match", [
    ({}, ValueError, "would add nothing"),
    ({"histograms": "yes"}, TypeError, "histograms must be True or False"),
    ({"images": [3]}, TypeError, "images must be a list of tensor names"),
])
def test_tensorboard_summaries_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        tfloop.TensorBoardSummaries(**kwargs)


def test_an_image_of_the_wrong_shape_is_refused_naming_it(logdir):
    with pytest.raises(ValueError, match="image tensor cost:0 has shape"):
        train_linear([tfloop.TensorBoardSummaries(images=["cost"])], max_epoch=1)


def test_the_profiler_writes_a_profile_of_the_chosen_steps(logdir, log_lines):
    train_linear([tfloop.TensorBoardProfiler(start_step=2, stop_step=4)], max_epoch=2)
    profiles = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    assert len(profiles) == 1
    content = open(profiles[0], "rb").read()
    assert b"MatMul" in content                       # the session's ops were traced
    started = [line for line in log_lines if "profiling from global step" in line]
    assert started == [f"TensorBoardProfiler: profiling from global step 2 to 4 into {logdir}."]
    assert any("up to global step 4" in line for line in log_lines)


def test_the_profiler_needs_a_stop_after_its_start():
    with pytest.raises(ValueError, match="stop_step"):
        tfloop.TensorBoardProfiler(start_step=5, stop_step=5)
