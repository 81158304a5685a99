"""TFEventWriter, read back with TensorBoard's own reader."""
import glob
import os

import numpy as np
import pytest
from support import LinearModel, train_linear
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import tfloop
from tfloop import Callback, TFEventWriter
from tfloop.compat import tf, tfv1
from tfloop.monitors.tfevent import encode_png


def read_events(logdir):
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0, "images": 0, "histograms": 0})
    acc.Reload()
    return acc


def steps_and_values(events):
    return [(e.step, pytest.approx(e.value)) for e in events]


class HistogramModel(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.add_moving_summary(cost)
        tfloop.add_param_summary(("w", ["histogram"]))
        return cost


def image_for(epoch):
    image = np.zeros((4, 5, 3), np.uint8)
    image[:, :, 0] = np.arange(5) * 50
    image[epoch, :, 1] = 255
    return image


class PutImagesAndEvents(Callback):
    def _trigger_epoch(self):
        self.trainer.monitors.put_image("sample", image_for(self.epoch_num))
        self.trainer.monitors.put_image("pair", np.stack([image_for(0), image_for(1)]))
        self.trainer.monitors.put_event(tfv1.Event(
            log_message=tfv1.LogMessage(message=f"epoch {self.epoch_num}")))

    def _after_train(self):
        self.trainer.monitors.put_scalar("final", 7.0)


def test_scalars_images_histograms_and_events_read_back_at_their_steps(tmp_path):
    logdir = str(tmp_path)
    trainer = train_linear([PutImagesAndEvents()], model=HistogramModel(),
                           monitors=[TFEventWriter(logdir, max_queue=1000, flush_secs=1000)],
                           extra_callbacks=[tfloop.MovingAverageSummary(),
                                            tfloop.MergeAllSummaries(period=2)])
    acc = read_events(logdir)
    assert steps_and_values(acc.Scalars("cost")) == [
        (step, value) for step, value in trainer.monitors.get_history("cost")]
    assert [e.step for e in acc.Scalars("cost")] == [3, 6]
    assert [(e.step, e.value) for e in acc.Scalars("final")] == [(6, 7.0)]

    assert [h.step for h in acc.Histograms("param-summary/w-histogram")] == [2, 3, 4, 6]
    assert all(h.histogram_value.num == 3 for h in acc.Histograms("param-summary/w-histogram"))

    images = acc.Images("sample")
    assert [(i.step, i.width, i.height) for i in images] == [(3, 5, 4), (6, 5, 4)]
    for epoch, image in zip((1, 2), images):
        decoded = tf.io.decode_png(image.encoded_image_string).numpy()
        np.testing.assert_array_equal(decoded, image_for(epoch))
    assert set(acc.Tags()["images"]) == {"sample", "pair/0", "pair/1"}

    messages = [(e.step, e.log_message.message)
                for path in glob.glob(os.path.join(logdir, "*tfevents*"))
                for e in tfv1.train.summary_iterator(path) if e.HasField("log_message")]
    assert messages == [(3, "epoch 1"), (6, "epoch 2")]


class ReadEventsAtEpochStart(Callback):
    def __init__(self, logdir):
        self.logdir = logdir
        self.seen = []

    def _before_epoch(self):
        acc = read_events(self.logdir)
        tags = acc.Tags()["scalars"]
        self.seen.append([e.step for e in acc.Scalars("epoch")] if "epoch" in tags else [])

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("epoch", self.epoch_num)


@pytest.mark.parametrize("write_graph", [True, False])
def test_the_training_graph_is_written_once(tmp_path, write_graph):
    train_linear([], monitors=[TFEventWriter(str(tmp_path), write_graph=write_graph)])
    graphs = [tfv1.GraphDef.FromString(e.graph_def)
              for path in glob.glob(str(tmp_path / "events.out.tfevents.*"))
              for e in tfv1.train.summary_iterator(path) if e.graph_def]
    assert len(graphs) == int(write_graph)
    if write_graph:
        assert {"w", "cost"} <= {node.name for node in graphs[0].node}


def test_events_are_on_disk_after_every_epoch(tmp_path):
    reader = ReadEventsAtEpochStart(str(tmp_path))
    train_linear([reader], monitors=[TFEventWriter(str(tmp_path), max_queue=1000, flush_secs=1000)],
                 max_epoch=3)
    assert reader.seen == [[], [3], [3, 6]]


def test_split_files_writes_one_file_per_epoch(tmp_path):
    putter = ReadEventsAtEpochStart(str(tmp_path))
    train_linear([putter], monitors=[TFEventWriter(str(tmp_path), split_files=True)], max_epoch=3)
    files = sorted(glob.glob(os.path.join(str(tmp_path), "*tfevents*")))
    assert len(files) == 3
    assert [e.step for e in read_events(str(tmp_path)).Scalars("epoch")] == [3, 6, 9]


def test_without_log_dir_it_writes_nothing(tmp_path, monkeypatch, tfloop_log):
    monkeypatch.chdir(tmp_path)
    writer = TFEventWriter()
    train_linear([ReadEventsAtEpochStart(str(tmp_path))], monitors=[writer], max_epoch=1)
    assert writer.logdir is None
    assert os.listdir(str(tmp_path)) == []
    warnings = [m for level, m in tfloop_log if level == "WARNING"]
    assert warnings == ["No log directory is set, so TFEventWriter is skipped: call "
                        "tfloop.utils.logger.set_logger_dir(...) before training to write them."]


def test_uses_the_logger_dir_by_default(logdir):
    train_linear([ReadEventsAtEpochStart(logdir)], monitors=[TFEventWriter()], max_epoch=1)
    assert [e.step for e in read_events(logdir).Scalars("epoch")] == [3]


def test_encode_png_round_trips_gray_rgb_and_rgba():
    rng = np.random.RandomState(0)
    for channels in (1, 3, 4):
        image = rng.randint(0, 256, size=(7, 3, channels)).astype(np.uint8)
        decoded = tf.io.decode_png(encode_png(image), channels=channels).numpy()
        np.testing.assert_array_equal(decoded, image)
    with pytest.raises(ValueError, match="HWC uint8"):
        encode_png(np.zeros((4, 4, 3), np.float32))


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_queue=0), "max_queue must be a positive int"),
    (dict(flush_secs=-1), "flush_secs must be a positive number"),
    (dict(logdir=3), "logdir must be a path"),
])
def test_bad_arguments_are_rejected(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        TFEventWriter(**kwargs)


class _FullDisk:
    """``tf.io.TFRecordWriter`` whose writes fail as on a full disk while ``full`` is set."""

    full = False
    real = tf.io.TFRecordWriter

    def __init__(self, path):
        self.path = path
        self.writer = self.real(path)

    def _check(self):
        if _FullDisk.full:
            raise tf.errors.ResourceExhaustedError(None, None,
                                                   f"{self.path}; No space left on device")

    def write(self, record):
        self._check()
        self.writer.write(record)

    def flush(self):
        self._check()
        self.writer.flush()

    def close(self):
        self.writer.close()


class _FillDisk(Callback):
    """The disk is full from the start of epoch ``first`` to the end of epoch ``last``."""

    def __init__(self, first, last):
        self.first, self.last = first, last

    def _before_epoch(self):
        _FullDisk.full = self.first <= self.epoch_num <= self.last

    def _after_epoch(self):
        if self.epoch_num == self.last:
            _FullDisk.full = False


def test_a_full_disk_is_logged_once_and_writing_resumes_after_it(tmp_path, monkeypatch, capfd,
                                                                 tfloop_log):
    monkeypatch.setattr(tf.io, "TFRecordWriter", _FullDisk)
    monkeypatch.setattr(_FullDisk, "full", False)
    writer = TFEventWriter(str(tmp_path), max_queue=1)
    trainer = train_linear([_FillDisk(2, 3), ReadEventsAtEpochStart(str(tmp_path))],
                           monitors=[writer], max_epoch=5)
    assert trainer.global_step == 15
    errors = [m for level, m in tfloop_log if level == "ERROR"]
    assert len(errors) == 1
    assert errors[0].startswith("TFEventWriter could not write TensorBoard events to {}".format(
        os.path.join(str(tmp_path), "events.out.tfevents.")))
    assert "at global step 6: ResourceExhaustedError: " in errors[0]
    assert "No space left on device" in errors[0] and "training continues" in errors[0]
    assert sum(m.startswith("TFEventWriter: writing events again") for _, m in tfloop_log) == 1
    # epoch 2's value, put while the disk was full, is lost, nothing else (epoch 3's is put after
    # the disk has space again)
    assert [e.step for e in read_events(str(tmp_path)).Scalars("epoch")] == [3, 9, 12, 15]
    assert len(glob.glob(os.path.join(str(tmp_path), "*tfevents*"))) >= 2
    assert "Traceback" not in capfd.readouterr().err
