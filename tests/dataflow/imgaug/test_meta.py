"""Augmentors that combine augmentors."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug

IMG = np.arange(16, dtype=np.uint8).reshape(4, 4)


def test_identity_and_map_image():
    assert imgaug.Identity().augment(IMG) is IMG
    assert imgaug.MapImage(lambda x: x // 2).augment(IMG).tolist() == (IMG // 2).tolist()
    t = imgaug.MapImage(lambda x: x, coord_func=lambda c: c * 2).get_transform(IMG)
    assert t.apply_coords(np.ones((1, 2))).tolist() == [[2.0, 2.0]]


def test_random_apply_aug():
    flip = imgaug.Flip(horiz=True, prob=1.0)
    assert np.array_equal(imgaug.RandomApplyAug(flip, 1.0).augment(IMG), IMG[:, ::-1])
    assert np.array_equal(imgaug.RandomApplyAug(flip, 0.0).augment(IMG), IMG)
    applied = sum(not np.array_equal(imgaug.RandomApplyAug(flip, 0.5).augment(IMG), IMG)
                  for _ in range(200))
    assert 60 < applied < 140


def test_random_choose_aug():
    flip_h, flip_v = imgaug.Flip(horiz=True, prob=1.0), imgaug.Flip(vert=True, prob=1.0)
    aug = imgaug.RandomChooseAug([flip_h, flip_v])
    outs = {aug.augment(IMG).tobytes() for _ in range(50)}
    assert outs == {IMG[:, ::-1].tobytes(), IMG[::-1].tobytes()}
    only_v = imgaug.RandomChooseAug([(flip_h, 0.0), (flip_v, 1.0)])
    assert np.array_equal(only_v.augment(IMG), IMG[::-1])
    with pytest.raises(ValueError, match="must sum to 1"):
        imgaug.RandomChooseAug([(flip_h, 0.3), (flip_v, 0.3)])


def test_random_order_aug_applies_all_in_some_order():
    add = imgaug.MapImage(lambda x: x + 1)
    double = imgaug.MapImage(lambda x: x * 2)
    aug = imgaug.RandomOrderAug([add, double])
    outs = {float(aug.augment(np.array([3.0]))[0]) for _ in range(50)}
    assert outs == {8, 7}  # (3 + 1) * 2 or 3 * 2 + 1


def test_meta_augmentors_reset_their_children():
    inner = imgaug.Brightness(5)
    for meta in (imgaug.RandomApplyAug(inner, 0.5), imgaug.RandomChooseAug([inner]),
                 imgaug.RandomOrderAug([inner])):
        before = inner.rng
        meta.reset_state()
        assert inner.rng is not before
