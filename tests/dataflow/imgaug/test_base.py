"""Augmentor base classes: RNG handling, the old interface, AugmentorList."""
import os

import numpy as np
import pytest

from tfloop.dataflow import fix_rng_seed, imgaug
from tfloop.dataflow.imgaug import (
    Augmentor,
    AugmentorList,
    ImageAugmentor,
    PhotometricAugmentor,
    PhotometricTransform,
)


class OldStyle(ImageAugmentor):
    """tensorpack's old interface: _get_augment_params + _augment (+ _augment_coords)."""

    def _get_augment_params(self, img):
        return self.rng.randint(1, 5)

    def _augment(self, img, shift):
        return img + shift

    def _augment_coords(self, coords, shift):
        return coords + shift


def test_old_interface_draws_params_once_per_transform():
    aug = OldStyle()
    t = aug.get_transform(np.zeros(2))
    out = t.apply_image(np.zeros(2))
    assert out[0] == out[1] and 1 <= out[0] < 5
    assert (t.apply_coords(np.zeros((1, 2))) == out[0]).all()


def test_augmentor_needs_get_transform_and_checks_images():
    class Nothing(ImageAugmentor):
        pass
    with pytest.raises(NotImplementedError, match="must implement get_transform"):
        Nothing().augment(np.zeros(2))
    with pytest.raises(TypeError, match="take a numpy array, got list"):
        OldStyle().augment([1, 2])
    assert Augmentor is ImageAugmentor


def test_reset_state_and_fixed_seed_give_the_same_draws():
    fix_rng_seed(5)
    try:
        a, b = imgaug.Brightness(50), imgaug.Brightness(50)
        img = np.full((2, 2), 100, np.uint8)
        assert np.array_equal(a.augment(img), b.augment(img))
    finally:
        fix_rng_seed(None)
    c = imgaug.Brightness(50)
    c.reset_state()
    assert isinstance(c.rng, np.random.RandomState)


def test_a_subclass_that_skips_super_init_still_gets_an_rng():
    class Lazy(PhotometricAugmentor):
        def __init__(self):
            self.k = 1

        def _get_augment_params(self, img):
            return self.rng.rand()

        def _augment(self, img, v):
            return img * 0 + v
    out = Lazy().augment(np.zeros(1))
    assert 0 <= out[0] < 1


def test_forked_children_draw_differently():
    aug = imgaug.Brightness(1000)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, str(aug.rng.randint(1 << 30)).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = int(os.read(read, 100))
    assert child != aug.rng.randint(1 << 30)


def test_augmentor_list_chains_and_resets_everything():
    crop, flip = imgaug.CenterCrop(2), imgaug.Flip(horiz=True, prob=1.0)
    augs = AugmentorList([crop, flip])
    img = np.arange(16, dtype=np.uint8).reshape(4, 4)
    assert augs.augment(img).tolist() == [[6, 5], [10, 9]]
    t = augs.get_transform(img)
    assert t.apply_image(img).tolist() == [[6, 5], [10, 9]]
    assert t.apply_coords(np.array([[1.5, 1.5]])).tolist() == [[1.5, 0.5]]
    old = flip.rng
    augs.reset_state()
    assert flip.rng is not old
    with pytest.raises(TypeError, match="is not an ImageAugmentor"):
        AugmentorList([crop, "flip"])
    with pytest.raises(ValueError, match=r"\(h, w\) or \(h, w, c\) images"):
        augs.augment(np.zeros((1, 2, 3, 4), np.uint8))
    assert "imgaug.CenterCrop(crop_shape=(2, 2))" in repr(augs)


def test_photometric_augmentor_leaves_coordinates():
    class Invert(PhotometricAugmentor):
        def _augment(self, img, _):
            return 255 - img
    t = Invert().get_transform(np.zeros(1, np.uint8))
    assert isinstance(t, PhotometricTransform)
    assert t.apply_image(np.zeros(1, np.uint8)).tolist() == [255]
    assert t.apply_coords(np.ones((1, 2))).tolist() == [[1.0, 1.0]]


def test_older_interface_returns_and_reapplies_the_transform():
    from tfloop.dataflow import imgaug
    augs = imgaug.AugmentorList([imgaug.RandomCrop(3), imgaug.Flip(horiz=True)])
    image = np.arange(25, dtype=np.float32).reshape(5, 5)
    out, params = augs.augment_return_params(image)
    assert out.shape == (3, 3)
    np.testing.assert_array_equal(augs.augment_with_params(image, params), out)
    corner = augs.augment_coords(np.array([[0.0, 0.0]]), params)
    np.testing.assert_array_equal(corner, params.apply_coords(np.array([[0.0, 0.0]])))
    with pytest.raises(TypeError, match="augment_return_params"):
        augs.augment_with_params(image, {"not": "a transform"})
