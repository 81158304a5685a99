"""Rotation and affine warps, on OpenCV and on numpy."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug
from tfloop.dataflow.imgaug import WarpAffineTransform, _backend

IMG = np.random.RandomState(0).randint(0, 256, (7, 7, 3)).astype(np.uint8)


@pytest.fixture(params=["opencv", "numpy"])
def backend(request, monkeypatch):
    monkeypatch.setattr(_backend, "use_opencv", request.param == "opencv")


def test_four_quarter_turns_about_the_centre_give_the_image_back(backend):
    mat = _backend.rotation_matrix((3.0, 3.0), 90)
    out = IMG
    for _ in range(4):
        out = WarpAffineTransform(mat, (7, 7)).apply_image(out)
    assert np.array_equal(out, IMG)
    once = WarpAffineTransform(mat, (7, 7), interp=_backend.INTER_NEAREST).apply_image(IMG)
    assert np.array_equal(once, np.rot90(IMG))


def test_numpy_warp_matches_opencv(monkeypatch):
    pytest.importorskip("cv2")
    mat = _backend.rotation_matrix((2.5, 3.5), 23.0, 1.1)
    for border in (_backend.BORDER_CONSTANT, _backend.BORDER_REPLICATE):
        a = _backend.warp_affine(IMG, mat, (9, 6), border=border, value=17)
        monkeypatch.setattr(_backend, "use_opencv", False)
        b = _backend.warp_affine(IMG, mat, (9, 6), border=border, value=17)
        monkeypatch.setattr(_backend, "use_opencv", True)
        assert a.shape == b.shape == (6, 9, 3)
        assert np.mean(np.abs(a.astype(int) - b.astype(int)) > 2) < 0.05


def test_rotation_keeps_size_moves_coordinates_and_checks_step(backend):
    aug = imgaug.Rotation(180, step_deg=90, center_range=(0.5, 0.5))
    t = aug.get_transform(IMG)
    out = t.apply_image(IMG)
    assert out.shape == IMG.shape
    assert any(np.array_equal(out, np.rot90(IMG, k)) for k in range(4))
    center = np.array([[3.0, 3.0]])
    assert np.allclose(t.apply_coords(center), center)
    with pytest.raises(ValueError, match="needs max_deg=180"):
        imgaug.Rotation(90, step_deg=45)


def test_rotation_and_crop_valid_keeps_only_rotated_pixels():
    import math

    from tfloop.dataflow.imgaug import RotationAndCropValid
    aug = RotationAndCropValid(30)
    image = np.full((60, 90, 3), 200, np.uint8)
    for _ in range(5):
        tfm = aug.get_transform(image)
        out = tfm.apply_image(image)
        assert out.shape[0] <= 60 and out.shape[1] <= 90
        assert out[1:-1, 1:-1].min() >= 195  # no fill from outside (edges interpolate)
    assert RotationAndCropValid.largest_rotated_rect(90, 60, 0) == (90, 60)
    w, h = RotationAndCropValid.largest_rotated_rect(100, 100, 45)
    assert w == h == round(100 / math.sqrt(2))


def test_rotation_and_crop_valid_step_needs_180():
    from tfloop.dataflow.imgaug import RotationAndCropValid
    with pytest.raises(ValueError, match="max_deg=180"):
        RotationAndCropValid(30, step_deg=90)
    aug = RotationAndCropValid(180, step_deg=90)
    shapes = {aug.augment(np.zeros((20, 30), np.float32)).shape for _ in range(30)}
    assert shapes == {(20, 30), (20, 20)}  # 0 or 180 degrees; +-90 crops the valid square
