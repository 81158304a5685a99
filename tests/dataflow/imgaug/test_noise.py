"""Noise augmentors."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug


def test_noise():
    noisy = imgaug.GaussianNoise(5).augment(np.full((50, 50), 100, np.uint8))
    assert noisy.dtype == np.uint8 and 3 < noisy.astype(float).std() < 7
    sp = imgaug.SaltPepperNoise(0.2, 0.2).augment(np.full((40, 40), 100, np.uint8))
    assert 0.1 < (sp == 255).mean() < 0.3 and 0.1 < (sp == 0).mean() < 0.3
    with pytest.raises(ValueError, match="at most 1"):
        imgaug.SaltPepperNoise(0.6, 0.6)


def test_jpeg_noise_is_opencv_jpeg_at_the_drawn_quality():
    cv2 = pytest.importorskip("cv2")
    img = np.random.RandomState(0).randint(0, 256, (16, 16, 3)).astype(np.uint8)
    out = imgaug.JpegNoise((50, 51)).augment(img)
    expected = cv2.imdecode(cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 50])[1], 1)
    np.testing.assert_array_equal(out, expected)
    error = {q: np.abs(imgaug.JpegNoise((q, q + 1)).augment(img).astype(int) - img).mean()
             for q in (5, 95)}
    assert error[95] < error[5]
    aug = imgaug.JpegNoise((40, 45))
    assert {aug._get_augment_params(img) for _ in range(50)} <= set(range(40, 45))


def test_jpeg_noise_checks_its_range_and_needs_opencv(monkeypatch):
    pytest.importorskip("cv2")
    with pytest.raises(ValueError, match=r"0 <= low < high <= 101, got \(90, 20\)"):
        imgaug.JpegNoise((90, 20))
    from tfloop.dataflow.imgaug import _backend
    monkeypatch.setattr(_backend, "use_opencv", False)
    with pytest.raises(ImportError, match="JpegNoise needs OpenCV"):
        imgaug.JpegNoise()
