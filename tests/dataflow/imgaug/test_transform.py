"""Deterministic transforms on images and coordinates."""
import numpy as np
import pytest

from tfloop.dataflow.imgaug import (
    CropTransform,
    FlipTransform,
    LazyTransform,
    NoOpTransform,
    PhotometricTransform,
    ResizeTransform,
    Transform,
    TransformFactory,
    TransformList,
    TransposeTransform,
)

IMG = np.arange(24, dtype=np.uint8).reshape(4, 6)


def coords():
    return np.array([[1.0, 2.0], [5.0, 0.0]])


def test_crop_and_flip_and_transpose_images_and_coordinates():
    crop = CropTransform(1, 2, 2, 3)
    assert crop.apply_image(IMG).tolist() == [[8, 9, 10], [14, 15, 16]]
    assert crop.apply_coords(coords()).tolist() == [[-1.0, 1.0], [3.0, -1.0]]
    flip = FlipTransform(4, 6, horiz=True)
    assert flip.apply_image(IMG)[0].tolist() == [5, 4, 3, 2, 1, 0]
    assert flip.apply_coords(coords()).tolist() == [[5.0, 2.0], [1.0, 0.0]]
    vflip = FlipTransform(4, 6, horiz=False)
    assert vflip.apply_image(IMG)[0].tolist() == IMG[3].tolist()
    assert vflip.apply_coords(coords()).tolist() == [[1.0, 2.0], [5.0, 4.0]]
    tr = TransposeTransform()
    assert tr.apply_image(IMG).shape == (6, 4)
    assert tr.apply_coords(coords()).tolist() == [[2.0, 1.0], [0.0, 5.0]]


def test_resize_checks_the_size_and_scales_coordinates():
    t = ResizeTransform(4, 6, 8, 3, 1)
    assert t.apply_image(IMG).shape == (8, 3)
    assert t.apply_coords(coords()).tolist() == [[0.5, 4.0], [2.5, 0.0]]
    with pytest.raises(ValueError, match=r"made for images of size \(4, 6\)"):
        t.apply_image(np.zeros((5, 5), np.uint8))


def test_noop_photometric_factory():
    assert NoOpTransform().apply_image(IMG) is IMG
    photo = PhotometricTransform(lambda x: x + 1)
    assert photo.apply_image(IMG)[0, 0] == 1
    assert photo.apply_coords(coords()).tolist() == coords().tolist()
    factory = TransformFactory(name="neg", apply_image=lambda x: -x)
    assert factory.apply_image(np.ones(1)).tolist() == [-1.0]
    with pytest.raises(NotImplementedError, match="cannot transform coordinates"):
        factory.apply_coords(coords())
    with pytest.raises(ValueError, match="apply_\\* functions"):
        TransformFactory(image=lambda x: x)
    with pytest.raises(NotImplementedError):
        Transform().apply_image(IMG)


def test_transform_list_and_lazy_transform():
    seen = []

    def decide(img):
        seen.append(img.shape)
        return CropTransform(0, 0, 1, 1)
    t = TransformList([CropTransform(0, 0, 2, 2), LazyTransform(decide)])
    assert t.apply_image(IMG).tolist() == [[0]]
    assert seen == [(2, 2)]  # decided from the previous step's output, once
    assert t.apply_coords(coords()).tolist() == coords().tolist()
    with pytest.raises(RuntimeError, match="apply_image must be called before apply_coords"):
        LazyTransform(decide).apply_coords(coords())
    assert "CropTransform(y0=0, x0=0, h=2, w=2)" in repr(CropTransform(0, 0, 2, 2))
