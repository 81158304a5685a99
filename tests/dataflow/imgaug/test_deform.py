"""GaussianDeform and its helpers (tensorpack's imgaug.deform)."""
import numpy as np
import pytest

from tfloop.dataflow.imgaug.deform import GaussianDeform, GaussianMap, np_sample

IMG = np.random.RandomState(0).randint(0, 256, (6, 8, 3)).astype(np.float32)


def test_np_sample_is_bilinear_and_clamps_to_the_image():
    grid = np.mgrid[0:6, 0:8].transpose(1, 2, 0).astype(np.float32)
    np.testing.assert_allclose(np_sample(IMG, grid), IMG)
    half = np_sample(IMG, np.array([[[0.5, 0.5]]]))
    np.testing.assert_allclose(half[0, 0], IMG[:2, :2].mean(axis=(0, 1)), rtol=1e-6)
    np.testing.assert_allclose(np_sample(IMG, np.array([[[-3.0, 20.0]]]))[0, 0], IMG[0, 7])


def test_gaussian_map_peaks_at_its_anchor():
    weight = GaussianMap((10, 10), sigma=0.5).get_gaussian_weight((0.3, 0.6))
    assert weight.shape == (10, 10) and weight.dtype == np.float32
    assert np.unravel_index(weight.argmax(), weight.shape) == (3, 6) and weight[3, 6] == 1.0
    np.testing.assert_allclose(weight[3, 9], np.exp(-0.09 / 0.5), rtol=1e-6)
    with pytest.raises(ValueError, match=r"\(h, w\) shape"):
        GaussianMap((10, 10, 3))


def test_gaussian_deform_moves_pixels_within_the_image_range():
    still = GaussianDeform([(0.5, 0.5)], (6, 8), randrange=0)
    np.testing.assert_allclose(still.augment(IMG), IMG)
    aug = GaussianDeform([(0.2, 0.2), (0.8, 0.7)], (6, 8), randrange=3)
    out = aug.augment(IMG)
    assert out.shape == IMG.shape and not np.allclose(out, IMG)
    assert IMG.min() <= out.min() and out.max() <= IMG.max()
    assert aug.augment(IMG[..., 0]).shape == (6, 8)
    with pytest.raises(ValueError, match=r"built for images of shape \(6, 8\), got \(5, 8\)"):
        aug.augment(IMG[:5])
