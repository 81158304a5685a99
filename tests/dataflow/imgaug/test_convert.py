"""Type and colour conversions."""
import numpy as np
import pytest

from tfloop.dataflow import imgaug

RGB = np.random.RandomState(0).randint(0, 256, (3, 4, 3)).astype(np.uint8)
U8 = np.array([[0, 100], [200, 250]], np.uint8)


def test_conversions():
    assert imgaug.ToUint8().augment(np.array([-5.0, 10.4, 300.0])).tolist() == [0, 10, 255]
    assert imgaug.ToFloat32().augment(U8).dtype == np.float32
    grey = imgaug.Grayscale(rgb=True).augment(RGB)
    assert grey.shape == (3, 4, 1) and grey.dtype == np.uint8
    assert imgaug.Grayscale(keepdims=False).augment(RGB).shape == (3, 4)
    assert imgaug.Grayscale(keepshape=True).augment(RGB).shape == (3, 4, 3)
    with pytest.raises(ValueError, match="keepshape=True needs keepdims=True"):
        imgaug.Grayscale(keepdims=False, keepshape=True)


def test_color_space_converts_with_opencv_and_keeps_dims():
    cv2 = pytest.importorskip("cv2")
    img = np.random.RandomState(0).randint(0, 256, (4, 5, 3)).astype(np.uint8)
    hsv = imgaug.ColorSpace(cv2.COLOR_BGR2HSV).augment(img)
    np.testing.assert_array_equal(hsv, cv2.cvtColor(img, cv2.COLOR_BGR2HSV))
    grey = imgaug.ColorSpace(cv2.COLOR_BGR2GRAY).augment(img)
    assert grey.shape == (4, 5, 1)
    np.testing.assert_array_equal(grey[..., 0], cv2.cvtColor(img, cv2.COLOR_BGR2GRAY))
    assert imgaug.ColorSpace(cv2.COLOR_BGR2GRAY, keepdims=False).augment(img).shape == (4, 5)
    with pytest.raises(TypeError, match="mode must be an OpenCV conversion code"):
        imgaug.ColorSpace("hsv")
