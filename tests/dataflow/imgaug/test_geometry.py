"""Affine warps (Shift, Rotation, RotationAndCropValid, Affine), on OpenCV and on numpy."""
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


def _shifted(img, dx, dy, fill):
    out = np.full_like(img, fill)
    h, w = img.shape[:2]
    out[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
        img[max(-dy, 0):h - max(dy, 0), max(-dx, 0):w - max(dx, 0)]
    return out


def test_shift_moves_by_whole_pixels_within_the_fractions(backend):
    img = np.random.RandomState(1).randint(0, 256, (10, 20, 3)).astype(np.uint8)
    aug = imgaug.Shift(horiz_frac=0.2, vert_frac=0.3, border=_backend.BORDER_CONSTANT,
                       border_value=7)
    seen = set()
    for _ in range(30):
        t = aug.get_transform(img)
        dx, dy = t.mat[0, 2], t.mat[1, 2]
        assert dx == int(dx) and dy == int(dy) and abs(dx) <= 4 and abs(dy) <= 3
        seen.add((dx, dy))
        np.testing.assert_array_equal(t.apply_image(img), _shifted(img, int(dx), int(dy), 7))
        np.testing.assert_allclose(t.apply_coords(np.array([[1.0, 2.0]])), [[1 + dx, 2 + dy]])
    assert len(seen) > 5
    assert np.array_equal(imgaug.Shift().augment(img), img)


def test_shift_replicates_the_border_by_default_and_checks_fractions():
    img = np.arange(5, dtype=np.uint8).reshape(1, 5)
    outs = {tuple(imgaug.Shift(horiz_frac=0.5).augment(img)[0]) for _ in range(40)}
    assert (0, 0, 0, 1, 2) in outs or (2, 3, 4, 4, 4) in outs
    for out in outs:  # each row is the ramp shifted, its edge repeated
        assert list(out) == sorted(out)
    with pytest.raises(ValueError, match=r"horiz_frac must be in \[0, 1\), got 1"):
        imgaug.Shift(horiz_frac=1)


def test_affine_defaults_leave_the_image_and_points_unchanged(backend):
    t = imgaug.Affine().get_transform(IMG)
    np.testing.assert_allclose(t.mat, [[1, 0, 0], [0, 1, 0]], atol=1e-12)
    assert np.array_equal(t.apply_image(IMG), IMG)


def test_affine_scales_rotates_and_shears_about_the_centre():
    img = np.zeros((9, 13), np.float32)
    center = np.array([[6.0, 4.0]])  # pixel centres: ((w - 1) / 2, (h - 1) / 2)
    zoom = imgaug.Affine(scale=(2.0, 2.0)).get_transform(img)
    np.testing.assert_allclose(zoom.apply_coords(center + [[1.0, 0.0]]), center + [[2.0, 0.0]])
    turn = imgaug.Affine(rotate_max_deg=30).get_transform(img)
    np.testing.assert_allclose(turn.apply_coords(center), center)
    for _ in range(10):
        shear = imgaug.Affine(shear=30).get_transform(img)
        np.testing.assert_allclose(shear.apply_coords(center), center, atol=1e-9)
        phi = np.arcsin(shear.mat[0, 1])  # no rotation or scale: [[1, sin phi], [0, cos phi]]
        np.testing.assert_allclose(shear.mat[:, :2], [[1, np.sin(phi)], [0, np.cos(phi)]],
                                   atol=1e-6)
        assert abs(np.degrees(phi)) <= 30


def test_affine_translation_is_whole_pixels_within_the_fractions(backend):
    img = np.random.RandomState(2).randint(0, 256, (10, 20)).astype(np.uint8)
    aug = imgaug.Affine(translate_frac=(0.1, 0.2), border=_backend.BORDER_CONSTANT)
    for _ in range(20):
        t = aug.get_transform(img)
        dx, dy = t.mat[0, 2], t.mat[1, 2]
        assert dx == int(dx) and dy == int(dy) and abs(dx) <= 2 and abs(dy) <= 2
        np.testing.assert_array_equal(t.apply_image(img), _shifted(img, int(dx), int(dy), 0))


def test_affine_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"scale must be a pair of floats \(a, b\), got 1.5"):
        imgaug.Affine(scale=1.5)
    with pytest.raises(ValueError, match="translate_frac must be a pair"):
        imgaug.Affine(translate_frac=(0.1, 0.1, 0.1))
    with pytest.raises(ValueError, match=r"shear must be an angle in \[0, 180\] degrees, got -1"):
        imgaug.Affine(shear=-1)

