"""Crops and cutout."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug

IMG = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)


def test_random_crop_covers_every_position_and_checks_size():
    aug = imgaug.RandomCrop((2, 3))
    corners = {tuple(aug.augment(IMG)[0, 0]) for _ in range(200)}
    expected = {tuple(IMG[y, x]) for y in range(3) for x in range(4)}
    assert corners == expected
    with pytest.raises(ValueError, match=r"smaller than the crop \(5, 5\)"):
        imgaug.RandomCrop(5).augment(IMG)
    with pytest.raises(ValueError, match="int or an \\(h, w\\) pair"):
        imgaug.RandomCrop((1, 2, 3))


def test_center_crop():
    assert np.array_equal(imgaug.CenterCrop((2, 2)).augment(IMG), IMG[1:3, 2:4])


def test_random_crop_random_shape_stays_in_range():
    aug = imgaug.RandomCropRandomShape(2, 1, 4, 3)
    shapes = {aug.augment(IMG).shape[:2] for _ in range(200)}
    assert shapes == {(h, w) for h in (1, 2, 3) for w in (2, 3, 4)}


def test_googlenet_crop_draws_windows_and_falls_back_to_a_centre_crop():
    aug = imgaug.GoogleNetRandomCropAndResize(target_shape=16)
    big = np.random.RandomState(0).randint(0, 256, (40, 60, 3)).astype(np.uint8)
    outs = [aug.augment(big) for _ in range(10)]
    assert all(o.shape == (16, 16, 3) for o in outs)
    assert len({o.tobytes() for o in outs}) > 1
    never = imgaug.GoogleNetRandomCropAndResize(crop_area_fraction=(2.0, 2.0), target_shape=4)
    t = never.get_transform(big)  # no window of twice the area fits: shorter side, then centre
    assert [type(x).__name__ for x in t.tfms] == ["ResizeTransform", "CropTransform"]
    assert t.apply_image(big).shape == (4, 4, 3)


def test_random_cutout_fills_one_rectangle_and_keeps_the_input():
    img = np.ones((6, 6), np.float32)
    out = imgaug.RandomCutout((1, 3), 2, fill=-1.0).augment(img)
    filled = np.argwhere(out == -1.0)
    assert len(filled) in (2, 4) and (img == 1).all()
    assert filled[:, 1].max() - filled[:, 1].min() == 1
    with pytest.raises(ValueError, match="does not fit in an image"):
        imgaug.RandomCutout(7, 1).augment(img)
