"""Flips, resizes and transposes (misc), and pasting on a canvas (paste)."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug
from tfloop.dataflow.imgaug import _backend

IMG = np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)


@pytest.fixture(params=["opencv", "numpy"])
def backend(request, monkeypatch):
    monkeypatch.setattr(_backend, "use_opencv", request.param == "opencv")


def test_flip_probability_and_direction():
    never, always = imgaug.Flip(vert=True, prob=0.0), imgaug.Flip(vert=True, prob=1.0)
    assert np.array_equal(never.augment(IMG), IMG)
    assert np.array_equal(always.augment(IMG), IMG[::-1])
    half = imgaug.Flip(horiz=True)
    flips = sum(np.array_equal(half.augment(IMG), IMG[:, ::-1]) for _ in range(400))
    assert 150 < flips < 250
    with pytest.raises(ValueError, match="exactly one of horiz=True or vert=True"):
        imgaug.Flip(horiz=True, vert=True)


def test_resize_and_shortest_edge(backend):
    assert imgaug.Resize((8, 3)).augment(IMG).shape == (8, 3, 3)
    assert imgaug.Resize(5).augment(IMG[:, :, 0]).shape == (5, 5)
    assert imgaug.Resize((2, 2)).augment(IMG[:, :, :1]).shape == (2, 2, 1)
    assert imgaug.ResizeShortestEdge(8).augment(IMG).shape == (8, 12, 3)
    assert imgaug.ResizeShortestEdge(3).augment(IMG.transpose(1, 0, 2)).shape == (5, 3, 3)
    flat = np.full((4, 4), 7, np.uint8)
    assert (imgaug.Resize((9, 9)).augment(flat) == 7).all()


def test_random_resize_scales_and_sizes(backend):
    keep = imgaug.RandomResize((0.5, 2.0), aspect_ratio_thres=0)
    big = np.zeros((40, 60), np.uint8)
    for _ in range(20):
        h, w = keep.augment(big).shape[:2]
        assert abs(w / h - 1.5) < 0.06 and 20 <= h <= 80
    pixels = imgaug.RandomResize((10, 12), (5, 6), aspect_ratio_thres=1.0)
    h, w = pixels.augment(IMG).shape[:2]
    assert 10 <= w <= 12 and 5 <= h <= 6
    with pytest.raises(ValueError, match="needs yrange unless aspect_ratio_thres=0"):
        imgaug.RandomResize((0.5, 2.0))


def test_transpose():
    assert imgaug.Transpose(prob=1.0).augment(IMG).shape == (6, 4, 3)
    assert imgaug.Transpose(prob=0.0).augment(IMG).shape == (4, 6, 3)


def test_center_paste_random_paste_and_fillers():
    small = np.ones((2, 2), np.uint8)
    out = imgaug.CenterPaste((4, 6)).augment(small)
    assert out.tolist() == [[0] * 6, [0, 0, 1, 1, 0, 0], [0, 0, 1, 1, 0, 0], [0] * 6]
    filled = imgaug.CenterPaste((3, 3), imgaug.ConstantBackgroundFiller(9)).augment(small[:1, :1])
    assert filled.tolist() == [[9, 9, 9], [9, 1, 9], [9, 9, 9]]
    t = imgaug.CenterPaste((4, 6)).get_transform(small)
    assert t.apply_coords(np.array([[0.0, 0.0]])).tolist() == [[2.0, 1.0]]
    positions = {tuple(np.argwhere(imgaug.RandomPaste((3, 3)).augment(small[:1, :1]))[0])
                 for _ in range(200)}
    assert len(positions) == 9
    with pytest.raises(ValueError, match="does not fit in the canvas"):
        imgaug.CenterPaste((1, 1)).augment(small)
    with pytest.raises(NotImplementedError):
        imgaug.BackgroundFiller().fill((1, 1), small)
