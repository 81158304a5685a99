"""DumpTensors and DumpTensorAsImage: files on disk hold the exact values fetched with the step."""
import os

import numpy as np
import pytest
from support import RecordingCallback, train_linear

import tfloop
from tfloop.callbacks.dump import encode_png
from tfloop.compat import tf


def fetched(log, step):
    """The values RecordingCallback fetched along with the step that ended at ``step``."""
    return [entry[5] for entry in log if entry[1] == "after_run" and entry[3] == step][0]


def npz_files(logdir):
    return sorted((f for f in os.listdir(logdir) if f.endswith(".npz")),
                  key=lambda f: int(f[len("DumpTensor-"):-len(".npz")]))


def decode_png(path):
    with open(path, "rb") as f:
        return tf.io.decode_png(f.read()).numpy()


def test_dump_tensors_along_with_the_last_step_of_each_epoch(logdir):
    log = []
    names = ["cost", "pred", "x"]
    runs = RecordingCallback("r", log, fetches=names)
    train_linear([tfloop.DumpTensors(names), runs], max_epoch=3)
    assert npz_files(logdir) == ["DumpTensor-3.npz", "DumpTensor-6.npz", "DumpTensor-9.npz"]
    for step in (3, 6, 9):
        dump = dict(np.load(os.path.join(logdir, f"DumpTensor-{step}.npz")))
        assert sorted(dump) == ["cost", "pred", "x"]
        cost, pred, x = fetched(log, step)
        assert dump["cost"] == pytest.approx(cost)
        np.testing.assert_allclose(dump["pred"], pred)
        np.testing.assert_allclose(dump["x"], x)
        assert dump["x"].shape == (4, 3)
    assert not [f for f in os.listdir(logdir) if f.endswith(".tmp")]


def test_dump_tensors_every_k_steps_and_every_k_epochs(logdir):
    train_linear([tfloop.PeriodicCallback(tfloop.DumpTensors("cost", every_step=True),
                                          every_k_steps=4)], max_epoch=3)
    # The tensors go with the steps that end at a multiple of 4, and the files are named so.
    assert npz_files(logdir) == ["DumpTensor-4.npz", "DumpTensor-8.npz"]
    for name in npz_files(logdir):
        os.remove(os.path.join(logdir, name))
    train_linear([tfloop.PeriodicCallback(tfloop.DumpTensors(["cost"]), every_k_epochs=2)],
                 max_epoch=4)
    assert npz_files(logdir) == ["DumpTensor-6.npz", "DumpTensor-12.npz"]


def test_dump_tensors_checks_names_and_log_dir(logdir):
    with pytest.raises(KeyError, match="Close matches: cost"):
        train_linear([tfloop.DumpTensors(["cosst"])], max_epoch=1)
    with pytest.raises(ValueError, match="must be unique"):
        tfloop.DumpTensors(["cost", "cost"])
    with pytest.raises(ValueError, match="list of tensor names"):
        tfloop.DumpTensors([])
    tfloop.logger.unset_logger_dir()
    with pytest.raises(ValueError, match="set_logger_dir"):
        train_linear([tfloop.DumpTensors(["cost"])], max_epoch=1)


class RecordImages(tfloop.MonitorBase):
    def __init__(self):
        self.images = []

    def process_image(self, name, images):
        self.images.append((self.global_step, name, images))


def test_dump_tensor_as_image_single_rgb_image(logdir):
    log = []
    images = RecordImages()
    train_linear([tfloop.DumpTensorAsImage("x:0", scale=100,
                                           map_func=lambda v: np.abs(v)[np.newaxis]),
                  RecordingCallback("r", log, fetches=["x"])], monitors=[images],
                 max_epoch=2)
    for step in (3, 6):
        expected = np.clip(np.abs(np.asarray(fetched(log, step)[0]))[np.newaxis] * 100, 0, 255)
        expected = expected.astype(np.uint8)                    # 1 x 4 x 3: one RGB image
        path = os.path.join(logdir, f"x-{step}.png")
        np.testing.assert_array_equal(decode_png(path), expected)
    assert [(step, name, im.shape) for step, name, im in images.images] == [
        (3, "x", (1, 1, 4, 3)), (6, "x", (1, 1, 4, 3))]


def test_dump_tensor_as_image_batch_with_prefix(logdir):
    log = []
    images = RecordImages()
    dump = tfloop.DumpTensorAsImage("pred", prefix="pred_img", scale=50,
                                    map_func=lambda v: v.reshape(2, 1, 2, 1) + 2)
    train_linear([dump, RecordingCallback("r", log, fetches=["pred"])], monitors=[images],
                 max_epoch=1)
    pred = np.asarray(fetched(log, 3)[0]).reshape(2, 1, 2, 1) + 2
    expected = np.clip(pred * 50, 0, 255).astype(np.uint8)
    for i in range(2):
        np.testing.assert_array_equal(
            decode_png(os.path.join(logdir, f"pred_img-3-{i}.png")), expected[i])
    assert len(images.images) == 1
    np.testing.assert_array_equal(images.images[0][2], expected)


def test_dump_tensor_as_image_rejects_non_images(logdir):
    with pytest.raises(ValueError, match=r"pred must give HW or HWC images .* an image of shape "
                                         r"\(4,\)"):
        train_linear([tfloop.DumpTensorAsImage("pred")], max_epoch=1)
    with pytest.raises(ValueError, match=r"a batch with an image of shape \(1, 1, 2\)"):
        train_linear([tfloop.DumpTensorAsImage("pred", map_func=lambda v: v.reshape(2, 1, 1, 2))],
                     max_epoch=1)
    with pytest.raises(TypeError, match="map_func must be callable"):
        tfloop.DumpTensorAsImage("pred", map_func=3)


@pytest.mark.parametrize("shape", [(5, 7), (5, 7, 1), (3, 2, 3), (4, 6, 4)])
def test_encode_png_round_trips(shape):
    image = np.random.RandomState(0).randint(0, 256, size=shape).astype(np.uint8)
    decoded = tf.io.decode_png(encode_png(image)).numpy()
    np.testing.assert_array_equal(decoded, image.reshape(shape[:2] + (-1,)))


@pytest.mark.parametrize("image", [np.zeros((2, 2), np.float32), np.zeros((2, 2, 2), np.uint8),
                                   np.zeros((2,), np.uint8)])
def test_encode_png_rejects_what_it_cannot_encode(image):
    with pytest.raises(ValueError, match="encode_png needs a uint8 image"):
        encode_png(image)
