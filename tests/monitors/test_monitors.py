"""The Monitors dispatcher, as callbacks and user backends see it in real training runs."""
import re

import numpy as np
import pytest
from support import LinearModel, train_linear

import tfloop
from tfloop import Callback, MonitorBase
from tfloop.compat import tfv1


class Recorder(MonitorBase):
    """A user-defined backend: logs every scalar it receives, and its own end-of-epoch flush."""

    def __init__(self):
        self.log = []

    def process_scalar(self, name, value):
        self.log.append((self.global_step, name, value))

    def _trigger_epoch(self):
        self.log.append(("flush", self.epoch_num))


class Putter(Callback):
    """Puts scalars from several hooks and remembers what it put, at which step."""

    def __init__(self):
        self.put = []

    def _put(self, name, value):
        self.put.append((self.global_step, name, value))
        self.trainer.monitors.put_scalar(name, value)

    def _before_train(self):
        self._put("start", 1.5)

    def _trigger_step(self):
        self._put("step", np.float32(self.global_step) / 2)

    def _after_epoch(self):
        self._put("after_epoch", self.epoch_num)

    def _trigger_epoch(self):
        self._put("epoch", self.epoch_num * 10.0)


class SummarizedModel(LinearModel):
    def build_graph(self, x, y):
        cost = super().build_graph(x, y)
        tfloop.add_moving_summary(cost)
        tfloop.add_tensor_summary(tfv1.get_default_graph().get_tensor_by_name("pred:0"), ["mean"])
        return cost


def test_history_and_latest_are_exactly_what_was_put():
    putter = Putter()
    monitors = train_linear([putter]).monitors
    for name in ("start", "step", "after_epoch", "epoch"):
        assert monitors.get_history(name) == [(s, v) for s, n, v in putter.put if n == name]
    assert monitors.get_history("step") == [(1, 0.5), (2, 1.0), (3, 1.5), (4, 2.0), (5, 2.5),
                                            (6, 3.0)]
    assert type(monitors.get_latest("step")) is float
    assert monitors.get_latest("epoch") == 20.0
    assert monitors.get_latest("after_epoch") == 2
    assert monitors.scalar_names() == ["after_epoch", "epoch", "start", "step"]


def test_unknown_name_raises_key_error_listing_known_names():
    monitors = train_linear([Putter()], max_epoch=1).monitors
    with pytest.raises(KeyError) as info:
        monitors.get_latest("val-error")
    message = str(info.value)
    assert "'val-error'" in message
    assert "['after_epoch', 'epoch', 'start', 'step']" in message
    with pytest.raises(KeyError, match="none yet"):
        train_linear(max_epoch=1).monitors.get_history("cost")


def test_user_backend_receives_exactly_the_scalars_put_in_order():
    putter, recorder = Putter(), Recorder()
    train_linear([putter], monitors=[recorder])
    received = [entry for entry in recorder.log if entry[0] != "flush"]
    assert received == putter.put


def test_backends_see_every_scalar_of_an_epoch_before_they_flush():
    recorder = Recorder()
    train_linear([Putter()], model=SummarizedModel(), monitors=[recorder],
                 extra_callbacks=[tfloop.MovingAverageSummary(), tfloop.MergeAllSummaries()])
    chunks, current = [], []
    for entry in recorder.log:
        if entry[0] == "flush":
            chunks.append((entry[1], current))
            current = []
        else:
            current.append(entry)
    assert current == []                       # nothing arrives after the last flush
    every_epoch = {"step", "after_epoch", "epoch", "cost", "pred-mean"}
    assert [(epoch, {name for _, name, _ in scalars}) for epoch, scalars in chunks] == [
        (1, every_epoch | {"start"}), (2, every_epoch)]
    for epoch, scalars in chunks:
        assert {step for step, name, _ in scalars if name != "start"} <= {
            3 * epoch - 2, 3 * epoch - 1, 3 * epoch}


class OpensInBeforeTrain(MonitorBase):
    """A backend that opens its "file" in ``_before_train``: logs each hook and each scalar it
    receives, or that it lost because its file was not open yet."""

    def __init__(self):
        self.log, self.is_open = [], False

    def _open(self):
        self.is_open = True
        self.log.append("open")

    def _before_train(self):
        self._open()

    def process_scalar(self, name, value):
        self.log.append((self.global_step, name, value) if self.is_open else ("lost", name))

    def _trigger(self):
        self.log.append("flush")

    def _after_train(self):
        self.is_open = False
        self.log.append("close")


class OpensInSetupGraph(OpensInBeforeTrain):
    def _setup_graph(self):
        self._open()

    def _before_train(self):
        self.log.append("before_train")


class OpensInPublicBeforeTrain(OpensInBeforeTrain):
    def before_train(self):     # Keras style: the public hook, as Callback allows
        self._open()


class PutIn(Callback):
    """Puts the scalar ``name`` = ``value`` in one hook; raises ``fail`` in ``before_train``."""

    def __init__(self, hook, name=None, value=None, fail=None):
        self.hook, self.name, self.value, self.fail = hook, name, value, fail

    def _setup_graph(self):
        if self.hook == "setup_graph":
            self.trainer.monitors.put_scalar(self.name, self.value)

    def _before_train(self):
        if self.hook == "before_train":
            self.trainer.monitors.put_scalar(self.name, self.value)
        if self.fail is not None:
            raise self.fail


class PutInBeforeTrainBackend(MonitorBase):
    """A backend that puts a scalar in its own ``before_train``."""

    def __init__(self, name, value):
        self.name, self.value = name, value

    def _before_train(self):
        self.trainer.monitors.put_scalar(self.name, self.value)


@pytest.mark.parametrize("backend_class", [OpensInBeforeTrain, OpensInSetupGraph,
                                           OpensInPublicBeforeTrain])
def test_a_backend_receives_every_scalar_put_before_its_before_train_once_it_ran(backend_class):
    backend = backend_class()
    monitors = train_linear(
        [PutIn("setup_graph", "setup", 1.0), PutIn("before_train", "before", 2.0)],
        monitors=[PutInBeforeTrainBackend("early-backend", 3.0), backend,
                  PutInBeforeTrainBackend("late-backend", 4.0)], max_epoch=1).monitors
    opening = ["open"] if backend_class is not OpensInSetupGraph else ["open", "before_train"]
    assert backend.log == opening + [
        (0, "setup", 1.0), (0, "before", 2.0), (0, "early-backend", 3.0),
        (0, "late-backend", 4.0), "flush", "close"]
    for name, value in (("setup", 1.0), ("before", 2.0), ("early-backend", 3.0)):
        assert monitors.get_history(name) == [(0, value)]


def test_what_was_held_reaches_a_backend_before_its_after_train_when_training_fails_earlier():
    backend = OpensInSetupGraph()
    with pytest.raises(RuntimeError, match="no start"):
        train_linear([PutIn("before_train", "before", 2.0),
                      PutIn(None, fail=RuntimeError("no start"))], monitors=[backend])
    assert backend.log == ["open", (0, "before", 2.0), "close"]


class SummaryRecorder(MonitorBase):
    def __init__(self):
        self.scalars, self.summaries, self.images = [], [], []

    def process_scalar(self, name, value):
        self.scalars.append((name, value))

    def process_summary(self, summary):
        self.summaries.append(summary)

    def process_image(self, name, images):
        self.images.append((name, images))


def put_in_training(put):
    """A one-epoch training whose callback calls ``put(trainer.monitors)``: a
    :class:`SummaryRecorder` backend's record, and the dispatcher."""
    recorder = SummaryRecorder()
    trainer = train_linear([PutOnce(put)], monitors=[recorder], max_epoch=1)
    return recorder, trainer.monitors


def test_put_summary_puts_scalar_values_without_tower_prefix():
    summary = tfv1.Summary(value=[
        tfv1.Summary.Value(tag="tower0/accuracy", simple_value=0.75),
        tfv1.Summary.Value(tag="weights", histo=tfv1.HistogramProto(num=2, sum=1.0))])
    recorder, monitors = put_in_training(lambda m: m.put_summary(summary.SerializeToString()))
    assert recorder.scalars == [("accuracy", 0.75)]
    assert [v.tag for v in recorder.summaries[0].value] == ["accuracy", "weights"]
    assert monitors.get_latest("accuracy") == 0.75
    with pytest.raises(TypeError, match="Summary or its bytes"):
        monitors.put_summary({"accuracy": 0.75})


def test_put_summary_takes_tensorboards_own_summary_proto_and_its_bytes():
    from tensorboard.compat.proto import summary_pb2
    from tensorboard.plugins.hparams import api as hp
    hparams = hp.hparams_pb({"lr": 0.1, "optimizer": "adam"})
    assert type(hparams) is summary_pb2.Summary and summary_pb2.Summary is not tfv1.Summary
    scalar = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag="acc", simple_value=0.5)])
    recorder, _ = put_in_training(lambda m: (m.put_summary(hparams),
                                             m.put_summary(scalar.SerializeToString()),
                                             m.put_summary(scalar)))
    assert all(type(s) is tfv1.Summary for s in recorder.summaries)
    assert recorder.summaries[0].SerializeToString() == hparams.SerializeToString()
    assert recorder.summaries[0].value[0].metadata.plugin_data.plugin_name == "hparams"
    assert recorder.scalars == [("acc", 0.5), ("acc", 0.5)]


def test_put_image_gives_backends_uint8_nhwc():
    recorder, monitors = put_in_training(
        lambda m: m.put_image("gray", np.array([[0.0, 0.5], [1.0, 2.0]])))
    name, images = recorder.images[0]
    assert name == "gray" and images.dtype == np.uint8 and images.shape == (1, 2, 2, 1)
    assert images[0, :, :, 0].tolist() == [[0, 127], [255, 255]]
    with pytest.raises(ValueError, match="1, 3 or 4 channels"):
        monitors.put_image("bad", np.zeros((2, 4, 4, 2)))


class PutOnce(Callback):
    def __init__(self, put):
        self.put = put

    def _trigger_epoch(self):
        self.put(self.trainer.monitors)


@pytest.mark.parametrize("put, error, message", [
    (lambda m: m.put_scalar("acc", "0.9"), TypeError,
     r"put_scalar\('acc'\) needs one real number \(int, float or a numpy scalar\), got '0.9' "
     r"\(str\)"),
    (lambda m: m.put_scalar("acc", None), TypeError, r"put_scalar\('acc'\) .* got None"),
    (lambda m: m.put_scalar("acc", np.zeros(3)), TypeError,
     r"put_scalar\('acc'\) .* \(ndarray of shape \(3,\)\)"),
    (lambda m: m.put_scalar("acc", 10 ** 400), ValueError,
     r"put_scalar\('acc'\) got the int 100000...000 \(401 digits\), too large for a float64"),
    (lambda m: m.put_scalar(3, 0.5), TypeError,
     r"put_scalar needs a non-empty str as the scalar's name, got 3 \(int\) for the value 0.5"),
    (lambda m: m.put_image("img", np.array([[["a"]]], dtype=object)), TypeError,
     r"put_image\('img'\) needs an array of numbers .* got dtype object"),
])
def test_bad_values_are_refused_naming_the_scalar(put, error, message):
    with pytest.raises(error, match=message):
        train_linear([PutOnce(put)], monitors=[Recorder()], max_epoch=1)


def test_one_element_arrays_and_numpy_scalars_are_scalars():
    recorder = Recorder()
    train_linear([PutOnce(lambda m: (m.put_scalar("a", np.array([2.5])),
                                     m.put_scalar("b", np.int64(3))))],
                 monitors=[recorder], max_epoch=1)
    assert [entry for entry in recorder.log if entry[0] != "flush"] == [(3, "a", 2.5), (3, "b", 3)]


class PutTensorScalars(Callback):
    """Puts, each epoch, TensorBoard's tensor-valued scalar summaries (v1 ``scalar_pb``, the form
    of ``tf.summary.scalar``), a one-number tensor of no plugin, and tensors that are no scalars
    (HParams' one-number tensor, a histogram, a text)."""

    def _trigger_epoch(self):
        from tensorboard.plugins.histogram import summary as histogram
        from tensorboard.plugins.hparams import api as hp
        from tensorboard.plugins.text import summary as text
        from tensorboard.summary import v1
        epoch = self.epoch_num
        plain = tfv1.Summary(value=[tfv1.Summary.Value(
            tag="tower0/count", tensor=tfv1.make_tensor_proto(np.int64(7 * epoch)))])
        for summary in (v1.scalar_pb("acc", 0.25 * epoch), plain, hp.hparams_pb({"lr": 0.1}),
                        histogram.pb("weights", np.arange(4.0)), text.pb("note", "hello")):
            self.trainer.monitors.put_summary(summary)


def test_tensor_valued_scalar_summaries_reach_every_backend(logdir, tfloop_log):
    import csv
    import json
    import os

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    recorder = Recorder()
    trainer = train_linear([PutTensorScalars()], max_epoch=2, monitors=[
        tfloop.JSONWriter(), tfloop.CSVWriter(), tfloop.ScalarPrinter(), tfloop.TFEventWriter(),
        recorder])
    expected = {"acc/scalar_summary": [(3, 0.25), (6, 0.5)], "count": [(3, 7), (6, 14)]}
    received = [entry for entry in recorder.log if entry[0] != "flush"]
    for name, history in expected.items():
        assert trainer.monitors.get_history(name) == history
        assert [(s, v) for s, n, v in received if n == name] == history
    assert {name for _, name, _ in received} == set(expected)
    with open(os.path.join(logdir, "stats.json")) as f:
        records = json.load(f)
    assert [(r["acc/scalar_summary"], r["count"]) for r in records] == [(0.25, 7), (0.5, 14)]
    with open(os.path.join(logdir, "stats.csv")) as f:
        rows = list(csv.DictReader(f))
    assert [(float(r["acc/scalar_summary"]), int(r["count"])) for r in rows] == [(0.25, 7),
                                                                               (0.5, 14)]
    lines = [m for level, m in tfloop_log if m.startswith("epoch ")]
    assert [re.sub(r" · \d+\.\d\d s", "", m) for m in lines] == [
        "epoch 1 · step 3 · acc/scalar_summary 0.25 · count 7",
        "epoch 2 · step 6 · acc/scalar_summary 0.5 · count 14"]
    events = EventAccumulator(logdir, size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("acc/scalar_summary")] == [(3, 0.25),
                                                                                  (6, 0.5)]
    assert "weights/histogram_summary" in events.Tags()["tensors"]


def test_summary_scalar_reads_the_numbers_tensorboard_calls_scalars():
    from tensorboard.plugins.hparams import api as hp
    from tensorboard.summary import v1

    from tfloop.monitors.base import summary_scalar

    def tensor_value(array, plugin=""):
        value = tfv1.Summary.Value(tag="t", tensor=tfv1.make_tensor_proto(array))
        value.metadata.plugin_data.plugin_name = plugin
        return value
    assert summary_scalar(v1.scalar_pb("acc", 0.5).value[0]) == 0.5
    assert summary_scalar(tfv1.Summary.Value(tag="s", simple_value=2.0)) == 2.0
    assert summary_scalar(tensor_value(np.array([[3]], np.int32))) == 3
    assert summary_scalar(tensor_value(np.bool_(True), "scalars")) == 1
    assert summary_scalar(tensor_value(np.float16(1.5), "scalars")) == 1.5
    for no_scalar in (tensor_value(np.array([1.0, 2.0])), tensor_value(np.array(b"x")),
                      tensor_value(np.float32(1.0), "histograms"),
                      hp.hparams_pb({"lr": 0.1}).value[0],
                      tfv1.Summary.Value(tag="h", histo=tfv1.HistogramProto(num=1))):
        assert summary_scalar(no_scalar) is None
