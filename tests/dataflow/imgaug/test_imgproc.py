"""Augmentors that change pixel values (imgproc): exact values where the draw is pinned."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug
from tfloop.dataflow.imgaug import _backend

U8 = np.array([[0, 100], [200, 250]], np.uint8)
RGB = np.random.RandomState(0).randint(0, 256, (3, 4, 3)).astype(np.uint8)


@pytest.fixture(params=["opencv", "numpy"])
def backend(request, monkeypatch):
    monkeypatch.setattr(_backend, "use_opencv", request.param == "opencv")


def test_brightness_adds_within_delta_and_clips():
    aug = imgaug.Brightness(20)
    for _ in range(20):
        diff = aug.augment(U8[:1, 1:]).astype(int) - 100
        assert -20 <= diff <= 20
    assert imgaug.Brightness(1e-6).augment(U8).tolist() == U8.tolist()
    floats = imgaug.Brightness(1, clip=False).augment(np.array([300.0], np.float32))
    assert 299 <= floats[0] <= 301
    with pytest.raises(ValueError, match="delta > 0"):
        imgaug.Brightness(0)


def test_brightness_scale_and_clip():
    assert imgaug.BrightnessScale((2, 2)).augment(U8).tolist() == [[0, 200], [255, 255]]
    assert imgaug.Clip(50, 150).augment(U8).tolist() == [[50, 100], [150, 150]]


def test_contrast_per_channel_and_grey_mean():
    # mean 137.5; results truncated to uint8 as in tensorpack
    assert imgaug.Contrast((0.5, 0.5)).augment(U8).tolist() == [[68, 118], [168, 193]]
    grey = imgaug.Contrast((0.0, 0.0), rgb=True).augment(RGB)
    expected = np.mean(RGB.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32))
    assert np.abs(grey.astype(float) - expected).max() <= 1


def test_mean_variance_normalize_and_min_max():
    out = imgaug.MeanVarianceNormalize().augment(RGB)
    assert out.dtype == np.float32 and abs(out.mean()) < 1e-5 and abs(out.std() - 1) < 1e-4
    per = imgaug.MeanVarianceNormalize(all_channel=False).augment(RGB)
    assert np.allclose(per.mean(axis=(0, 1)), 0, atol=1e-5)
    flat = imgaug.MeanVarianceNormalize().augment(np.full((2, 2), 5, np.uint8))
    assert (flat == 0).all()
    mm = imgaug.MinMaxNormalize(-1, 1).augment(U8)
    assert mm.min() == -1 and mm.max() == 1
    per_channel = imgaug.MinMaxNormalize(all_channel=False).augment(RGB)
    assert np.allclose(per_channel.max(axis=(0, 1)), 255)


def test_gaussian_blur_keeps_flat_images_and_smooths(backend):
    flat = np.full((5, 5, 3), 80, np.uint8)
    assert (imgaug.GaussianBlur(size_range=(1, 3)).augment(flat) == 80).all()
    spike = np.zeros((7, 7), np.float32)
    spike[3, 3] = 1
    out = imgaug.GaussianBlur(size_range=(1, 2), sigma_range=(1, 1)).augment(spike)
    assert out.shape == (7, 7) and 0 < out[3, 3] < 1 and abs(out.sum() - 1) < 1e-5
    assert imgaug.GaussianBlur(max_size=2).size_range == (0, 2)


def test_gamma_saturation_lighting(backend):
    assert imgaug.Gamma((0, 0)).augment(U8).tolist() == U8.tolist()
    brighter = imgaug.Gamma((1, 1)).augment(U8)
    assert (brighter >= U8).all() and brighter[0, 0] == 0
    grey_img = np.repeat(U8[:, :, None], 3, axis=2)
    assert np.abs(imgaug.Saturation(0.4).augment(grey_img).astype(int) - grey_img).max() <= 1
    with pytest.raises(ValueError, match="0 <= alpha < 1"):
        imgaug.Saturation(1.5)
    light = imgaug.Lighting(0.0, [1, 1, 1], np.eye(3))
    assert np.array_equal(light.augment(RGB), RGB)
    with pytest.raises(ValueError, match=r"\(h, w, 3\) images"):
        light.augment(U8)
    with pytest.raises(ValueError, match="3 eigenvalues and a 3x3 eigvec"):
        imgaug.Lighting(0.1, [1, 1], np.eye(3))


def _solid(rgb, dtype=np.uint8):
    return np.tile(np.asarray(rgb, dtype), (2, 3, 1))


def test_hue_turns_colours_in_opencv_units():
    pytest.importorskip("cv2")
    red, green, blue = _solid([255, 0, 0]), _solid([0, 255, 0]), _solid([0, 0, 255])
    assert np.array_equal(imgaug.Hue((60, 60)).augment(red), green)  # 180 units: a full turn
    assert np.array_equal(imgaug.Hue((-60, -60)).augment(red), blue)
    assert np.array_equal(imgaug.Hue((180, 180)).augment(red), red)
    # BGR: blue-green-red order, so the same turn goes the other way round the colours
    assert np.array_equal(imgaug.Hue((60, 60), rgb=False).augment(blue), green)
    assert np.array_equal(imgaug.Hue((60, 60), rgb=False).augment(red), blue)


def test_hue_on_float_images_keeps_dtype_and_draws_within_range():
    pytest.importorskip("cv2")
    out = imgaug.Hue((60, 60)).augment(_solid([1.0, 0.0, 0.0], np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, _solid([0.0, 1.0, 0.0], np.float32), atol=1e-6)
    aug = imgaug.Hue((10, 20))
    assert all(10 <= aug._get_augment_params(None) <= 20 for _ in range(20))


def test_hue_needs_colour_images_and_opencv(monkeypatch):
    pytest.importorskip("cv2")
    with pytest.raises(ValueError, match=r"Hue needs an \(h, w, 3\) colour image, got shape"):
        imgaug.Hue().augment(U8)
    monkeypatch.setattr(_backend, "use_opencv", False)
    with pytest.raises(ImportError, match="pip install opencv-python-headless"):
        imgaug.Hue()
