"""A real TensorBoard server (started on 127.0.0.1, asked over HTTP) shows a tfloop run's
scalars, histograms, images and hyper-parameters with its final metrics."""
import glob
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

import pytest
from support import LinearModel, LRModel, scaled_timeout, train_linear

import tfloop
from tfloop.compat import tf

pytestmark = pytest.mark.slow


class ImageLRModel(LRModel):
    def build_graph(self, x, y):
        tf.identity(tf.reshape(tf.sigmoid(x), [-1, 1, 3, 1]), name="image")
        return LinearModel.build_graph(self, x, y)


class PutVal(tfloop.Callback):
    def _trigger(self):
        self.trainer.monitors.put_scalar("val_cost", 1.0 / self.epoch_num)


class TensorBoard:
    """``tensorboard --logdir <logdir> --port 0 --host 127.0.0.1`` until ``stop()``."""

    def __init__(self, logdir):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tensorboard.main", "--logdir", logdir, "--port", "0",
             "--host", "127.0.0.1", "--load_fast=false", "--reload_interval", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = None
        self._found = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._found.wait(scaled_timeout(60)):
            self.stop()
            raise RuntimeError("TensorBoard did not print its address")

    def _read(self):
        for line in self.proc.stderr:
            match = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
            if match and self.url is None:
                self.url = match.group(1)
                self._found.set()

    def get(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data,
                                         headers={"Content-Type": "application/json",
                                                  "X-TensorBoard-Feature-Flags": "{}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def wait_for(self, path, ready):
        deadline = time.monotonic() + scaled_timeout(60)
        while True:
            answer = self.get(path)
            if ready(answer) or time.monotonic() > deadline:
                return answer
            time.sleep(0.5)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def test_a_real_tensorboard_shows_every_dashboard_of_a_run(logdir):
    setter = tfloop.ScheduledHyperParamSetter("learning_rate", [(0, 0.05)])
    train_linear([setter, PutVal(), tfloop.HyperParams({"batch_size": 4, "opt": "sgd"}),
                  tfloop.TensorBoardSummaries(histograms=True, images=["image"]),
                  tfloop.TensorBoardProfiler(start_step=1, stop_step=3)],
                 model=ImageLRModel(), max_epoch=3, monitors=[tfloop.TFEventWriter()],
                 extra_callbacks=[tfloop.MergeAllSummaries()])
    server = TensorBoard(os.path.dirname(logdir))
    try:
        run = os.path.basename(logdir)
        scalars = server.wait_for("/data/plugin/scalars/tags", lambda tags: run in tags)
        assert {"val_cost", "learning_rate"} <= set(scalars[run])
        assert "w/histogram" in server.get("/data/plugin/histograms/tags")[run]
        assert set(server.get("/data/plugin/images/tags")[run]) == {
            "image/image/0", "image/image/1", "image/image/2"}
        experiment = server.get("/data/plugin/hparams/experiment", {"experimentName": ""})
        names = {info["name"] for info in experiment["hparamInfos"]}
        assert {"batch_size", "opt", "learning_rate", "max_epoch", "model"} <= names
        metrics = {info["name"]["tag"] for info in experiment["metricInfos"]}
        assert "val_cost" in metrics
        groups = server.get("/data/plugin/hparams/session_groups", {
            "experimentName": "", "allowedStatuses": ["STATUS_SUCCESS"], "colParams": [],
            "startIndex": 0, "sliceSize": 10})
        session = groups["sessionGroups"][0]
        assert session["hparams"]["opt"] == "sgd"
        assert session["hparams"]["learning_rate"] == pytest.approx(0.05)
        final = {m["name"]["tag"]: m["value"] for m in session["metricValues"]}
        assert final["val_cost"] == pytest.approx(1.0 / 3)       # the run's last value
        assert session["sessions"][0]["status"] == "STATUS_SUCCESS"
    finally:
        server.stop()
    assert glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
