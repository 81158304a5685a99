"""Albumentations and IAAugmentor: the library's draw applied as a tfloop transform, and the
pip command when the library is missing."""
import sys
import types

import numpy as np
import pytest

from tfloop.dataflow import imgaug

IMG = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)


def test_missing_libraries_are_named_with_their_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "albumentations", None)
    monkeypatch.setitem(sys.modules, "imgaug", None)
    with pytest.raises(ImportError, match="`pip install albumentations`"):
        imgaug.Albumentations(object())
    with pytest.raises(ImportError, match="`pip install imgaug`"):
        imgaug.IAAugmentor(object())


def test_albumentations_draw_is_frozen_in_the_transform():
    A = pytest.importorskip("albumentations")
    aug = imgaug.Albumentations(A.RandomRotate90(p=1))
    out, transform = aug.augment_return_params(IMG)
    assert any(np.array_equal(out, np.rot90(IMG, k)) for k in range(4))
    np.testing.assert_array_equal(transform.apply_image(IMG), out)  # the same rotation again
    changed = imgaug.Albumentations(A.RandomBrightnessContrast(p=1)).augment(IMG)
    assert changed.shape == IMG.shape and changed.dtype == np.uint8
    with pytest.raises(TypeError, match="wraps an albumentations transform"):
        imgaug.Albumentations("RandomRotate90")


class _Point:
    def __init__(self, x, y):
        self.x, self.y = x, y


class _Points:
    def __init__(self, keypoints, shape):
        self.keypoints, self.shape = keypoints, shape


class _FlipLR:
    """imgaug's augmenter interface, as IAAugmentor uses it: a left-right flip."""

    def __init__(self):
        self.frozen = 0

    def to_deterministic(self):
        self.frozen += 1
        return self

    def augment_image(self, img):
        return img[:, ::-1]

    def augment_keypoints(self, batch):
        return [_Points([_Point(p.shape[1] - k.x, k.y) for k in p.keypoints], p.shape)
                for p in batch]


def test_iaa_augmentor_freezes_a_draw_for_images_and_points(monkeypatch):
    fake = types.ModuleType("imgaug")
    fake.Keypoint, fake.KeypointsOnImage = _Point, _Points
    monkeypatch.setitem(sys.modules, "imgaug", fake)
    flip = _FlipLR()
    aug = imgaug.IAAugmentor(flip)
    out, transform = aug.augment_return_params(IMG)
    assert flip.frozen == 1
    np.testing.assert_array_equal(out, IMG[:, ::-1])
    np.testing.assert_allclose(transform.apply_coords(np.array([[1.0, 2.0], [5.5, 0.5]])),
                               [[5.0, 2.0], [0.5, 0.5]])
    with pytest.raises(TypeError, match="wraps an imgaug augmenter"):
        imgaug.IAAugmentor(lambda img: img)
