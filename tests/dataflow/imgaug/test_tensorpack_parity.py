"""The augmentors added at tensorpack's paths give tensorpack 0.11's pixels for the same draws
(both seeded alike; OpenCV on both sides)."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug

cv2 = pytest.importorskip("cv2")
tensorpack_imgaug = pytest.importorskip("tensorpack.dataflow.imgaug",
                                        reason="tensorpack 0.11 (the test extra) is not installed")

IMG = np.random.RandomState(0).randint(0, 256, (12, 16, 3)).astype(np.uint8)
CASES = {
    "Affine": lambda m: m.Affine(scale=(0.8, 1.2), translate_frac=(0.1, 0.2), rotate_max_deg=20,
                                 shear=15, border=cv2.BORDER_CONSTANT),
    "Shift": lambda m: m.Shift(0.2, 0.3),
    "Hue": lambda m: m.Hue((-40, 40)),
    "Hue-bgr": lambda m: m.Hue((-90, 90), rgb=False),
    "JpegNoise": lambda m: m.JpegNoise((30, 90)),
    "ColorSpace": lambda m: m.ColorSpace(cv2.COLOR_BGR2HSV),
}


@pytest.fixture
def tensorpack_cv2_angles(monkeypatch):
    """tensorpack's Affine passes a float32 angle, which OpenCV 4.7+ refuses; give it a float."""
    rotation = cv2.getRotationMatrix2D
    monkeypatch.setattr(cv2, "getRotationMatrix2D",
                        lambda c, a, s: rotation(tuple(map(float, c)), float(a), float(s)))


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_same_pixels_as_tensorpack(name, dtype, tensorpack_cv2_angles):
    if name == "JpegNoise" and dtype == "float32":
        pytest.skip("JPEG holds uint8 pixels")
    img = IMG if dtype == "uint8" else IMG.astype(np.float32) / 255
    ours, theirs = CASES[name](imgaug), CASES[name](tensorpack_imgaug)
    ours.rng, theirs.rng = np.random.RandomState(5), np.random.RandomState(5)
    for _ in range(4):
        np.testing.assert_array_equal(ours.augment(img), theirs.augment(img))
