"""The numpy versions of the image operations agree with OpenCV's."""
import numpy as np
import pytest

from tfloop.dataflow.imgaug import _backend

cv2 = pytest.importorskip("cv2")


@pytest.fixture
def numpy_only(monkeypatch):
    monkeypatch.setattr(_backend, "use_opencv", False)


def both(fn, monkeypatch):
    with_cv = fn()
    monkeypatch.setattr(_backend, "use_opencv", False)
    without = fn()
    monkeypatch.setattr(_backend, "use_opencv", True)
    return with_cv, without


@pytest.mark.parametrize("shape,new",
                         [((6, 8, 3), (9, 5)), ((7, 7), (14, 3)), ((4, 6, 1), (8, 12))])
def test_resize_linear_matches_opencv(shape, new, monkeypatch):
    img = np.random.RandomState(0).randint(0, 256, shape).astype(np.uint8)
    a, b = both(lambda: _backend.resize(img, *new, _backend.INTER_LINEAR), monkeypatch)
    assert a.shape == b.shape == new + shape[2:]
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 1
    f = img.astype(np.float32)
    a, b = both(lambda: _backend.resize(f, *new), monkeypatch)
    np.testing.assert_allclose(a, b, atol=1e-3)


def test_resize_nearest_matches_opencv(monkeypatch):
    img = np.arange(48, dtype=np.uint8).reshape(6, 8)
    a, b = both(lambda: _backend.resize(img, 3, 5, _backend.INTER_NEAREST), monkeypatch)
    assert np.array_equal(a, b)


@pytest.mark.parametrize("size,sigma", [((3, 3), (0, 0)), ((5, 3), (1.5, 0.7)), ((7, 7), (0, 0))])
def test_gaussian_blur_matches_opencv(size, sigma, monkeypatch):
    img = np.random.RandomState(1).randint(0, 256, (9, 11, 3)).astype(np.uint8)
    a, b = both(lambda: _backend.gaussian_blur(img, size, sigma), monkeypatch)
    assert a.shape == b.shape == img.shape
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 1


def test_gray_matches_opencv():
    img = np.random.RandomState(2).randint(0, 256, (4, 5, 3)).astype(np.uint8)
    ours = _backend.to_gray(img, rgb=True)
    theirs = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    assert np.abs(np.rint(ours) - theirs).max() <= 1
    bgr = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    assert np.abs(np.rint(_backend.to_gray(img, rgb=False)) - bgr).max() <= 1


def test_cv2_switch(numpy_only):
    assert _backend.cv2() is None


LABEL_DTYPES = ["int32", "int64", "int8", "uint32", "bool"]


def _labels(dtype):
    return (np.arange(64).reshape(8, 8) % 3 == 1 if dtype == "bool"
            else np.arange(64).reshape(8, 8) % 3).astype(dtype)


def _as_labels(values, dtype):
    rounded = np.rint(values)
    return (rounded != 0) if dtype == "bool" else rounded.astype(dtype)


@pytest.mark.parametrize("dtype", LABEL_DTYPES)
@pytest.mark.parametrize("interp", [_backend.INTER_NEAREST, _backend.INTER_LINEAR])
def test_label_maps_keep_their_dtype_through_every_operation(dtype, interp, monkeypatch):
    # OpenCV refuses int32 with INTER_LINEAR and bool in warpAffine, and turns int64 into int32;
    # these go through float64, rounded back.
    labels = _labels(dtype)
    reference = labels.astype(np.float64)
    rotate = _backend.rotation_matrix((4, 4), 30)
    for op in (lambda a: _backend.resize(a, 5, 11, interp),
               lambda a: _backend.warp_affine(a, rotate, (8, 8), interp),
               lambda a: _backend.gaussian_blur(a, (3, 3), (0, 0))):
        out = op(labels)
        assert out.dtype == labels.dtype
        np.testing.assert_array_equal(out, _as_labels(op(reference), dtype))
        monkeypatch.setattr(_backend, "use_opencv", False)
        assert op(labels).dtype == labels.dtype
        monkeypatch.setattr(_backend, "use_opencv", True)
