"""Augmenting image components of datapoints."""
import numpy as np
import pytest

from tfloop.dataflow import (
    AugmentImageComponent,
    AugmentImageComponents,
    AugmentImageCoordinates,
    DataFromList,
    MapData,
    fix_rng_seed,
    imgaug,
)


def image(h=6, w=8):
    return np.arange(h * w * 3, dtype=np.uint8).reshape(h, w, 3)


def test_augment_image_component_copies_by_default_and_resets_augmentors():
    img = image()
    df = AugmentImageComponent(DataFromList([[img, 1]], shuffle=False),
                               [imgaug.MapImage(lambda x: x.__setitem__(0, 0) or x)])
    df.reset_state()
    out, label = next(iter(df))
    assert label == 1 and (out[0] == 0).all() and img[0, 0, 1] == 1  # original untouched
    fix_rng_seed(0)
    try:
        crops = AugmentImageComponent(DataFromList([[img]] * 5, shuffle=False),
                                      imgaug.AugmentorList([imgaug.RandomCrop(3)]))
        crops.reset_state()
        first = [dp[0].tolist() for dp in crops]
        crops.reset_state()
        assert [dp[0].tolist() for dp in crops] == first
    finally:
        fix_rng_seed(None)


def test_augment_image_component_catches_or_raises(log_warnings):
    bad = DataFromList([[image(2, 2)], [image(6, 6)]], shuffle=False)
    strict = AugmentImageComponent(bad, [imgaug.CenterCrop(4)])
    strict.reset_state()
    with pytest.raises(ValueError, match=r"smaller than the crop \(4, 4\)"):
        list(strict)
    lenient = AugmentImageComponent(bad, [imgaug.CenterCrop(4)], catch_exceptions=True)
    lenient.reset_state()
    assert [dp[0].shape for dp in lenient] == [(4, 4, 3)]
    assert log_warnings == ["Dropped a datapoint whose augmentation failed (1 so far)."]
    wrong = AugmentImageComponent(DataFromList([[np.array([["a", "b"]])]], shuffle=False),
                                  [imgaug.Flip(horiz=True)])
    with pytest.raises(TypeError, match="arrays of numbers .* got dtype <U1"):
        list(wrong)


class Segmentation(DataFromList):
    """tensorpack-style segmentation data: an RGB image and an int32 map of class ids."""

    def __init__(self, dtype="int32"):
        rng = np.random.RandomState(0)
        super().__init__([[rng.randint(0, 256, (8, 10, 3)).astype(np.uint8),
                           rng.randint(0, 3, (8, 10)).astype(dtype)] for _ in range(4)],
                         shuffle=False)


@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_int_label_maps_are_augmented_with_their_image(dtype):
    # tensorpack's dtype check never refused a label map of any integer type.
    import cv2
    augmentors = [imgaug.Flip(horiz=True), imgaug.RandomCrop((6, 8)),
                  imgaug.Resize((12, 16), interp=cv2.INTER_NEAREST),
                  imgaug.Rotation(20, interp=cv2.INTER_NEAREST)]
    with_float = MapData(Segmentation(dtype), lambda dp: dp + [dp[1].astype(np.float64)])
    df = AugmentImageComponents(with_float, augmentors, index=(0, 1, 2))
    df.reset_state()
    for image_out, labels, reference in df:
        assert image_out.shape == (12, 16, 3) and labels.shape == (12, 16)
        assert labels.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(labels, reference.astype(dtype))   # the same transforms


def test_augment_image_components_share_the_random_choices():
    img = image()
    mask = img[:, :, 0].copy()
    df = AugmentImageComponents(DataFromList([[img, mask, 9]] * 4, shuffle=False),
                                [imgaug.RandomCrop((3, 4)), imgaug.Flip(horiz=True)],
                                index=(0, 1))
    df.reset_state()
    for out_img, out_mask, label in df:
        assert np.array_equal(out_img[:, :, 0], out_mask) and label == 9


def test_augment_image_coordinates_moves_points_with_the_image():
    img = np.zeros((6, 8), np.uint8)
    img[2, 5] = 255
    coords = np.array([[5.0, 2.0]])
    df = AugmentImageCoordinates(DataFromList([[img, coords]], shuffle=False),
                                 [imgaug.CenterCrop((4, 4)), imgaug.Flip(horiz=True, prob=1.0)])
    df.reset_state()
    out_img, out_coords = next(iter(df))
    y, x = np.argwhere(out_img == 255)[0]
    assert out_coords.tolist() == [[4 - 3.0, 1.0]]  # crop moves (5, 2) to (3, 1); flip: 4 - 3
    assert (x, y) == (0, 1)  # pixel index x = width - 1 - 3 for the pixel whose left edge is 3
    assert coords.tolist() == [[5.0, 2.0]]
    with pytest.raises(ValueError, match=r"\(N, 2\) floating-point array"):
        list(AugmentImageCoordinates(DataFromList([[img, np.array([1, 2])]], shuffle=False),
                                     [imgaug.Identity()]))
