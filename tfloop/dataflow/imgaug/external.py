"""Augmentors of other libraries as tfloop augmentors: albumentations and aleju's imgaug.

Neither library is a dependency of tfloop: each wrapper imports its library when it is built and
says how to install it when that fails.
"""
import numpy as np

from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import Transform

__all__ = ["IAAugmentor", "Albumentations"]


def _import(owner, module, install):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"{owner} needs the {module} library, which is not installed: run "
                          f"`{install}`.") from None
    except AttributeError as e:  # imgaug 0.4 uses numpy names that numpy 2 removed
        raise ImportError(f"{owner}: the installed {module} library cannot be imported ({e}); "
                          "imgaug 0.4 needs numpy < 2.") from None


class IAATransform(Transform):
    """One draw of an imgaug augmenter, frozen (``to_deterministic()``): the same change to
    every image of the same size, and to ``(x, y)`` coordinates as imgaug keypoints.

    Example:
        >>> t = IAAugmentor(iaa.Fliplr(0.5)).get_transform(img)  # doctest: +SKIP
        >>> t.apply_image(mask), t.apply_coords(points)  # doctest: +SKIP
    """

    def __init__(self, aug, img_shape):
        self.aug, self.img_shape = aug, tuple(img_shape)

    def apply_image(self, img):
        return self.aug.augment_image(img)

    def apply_coords(self, coords):
        ia = _import("IAAugmentor", "imgaug", "pip install imgaug")
        points = ia.KeypointsOnImage([ia.Keypoint(x=x, y=y) for x, y in coords],
                                     shape=self.img_shape)
        moved = self.aug.augment_keypoints([points])[0].keypoints
        return np.asarray([[p.x, p.y] for p in moved], dtype=np.float64).reshape(-1, 2)


class IAAugmentor(ImageAugmentor):
    """An augmenter of aleju's imgaug library (https://github.com/aleju/imgaug) as a tfloop
    augmentor, for images and coordinates. imgaug takes uint8 images, keeps their shape, and
    moves coordinates only approximately; it draws from its own random state.

    Example:
        >>> from imgaug import augmenters as iaa  # doctest: +SKIP
        >>> aug = IAAugmentor(iaa.Sequential([iaa.Fliplr(0.5)]))  # doctest: +SKIP
    """

    def __init__(self, augmentor):
        """
        Args:
            augmentor (imgaug.augmenters.Augmenter): the augmenter to wrap.
        """
        _import("IAAugmentor", "imgaug", "pip install imgaug")
        if not hasattr(augmentor, "to_deterministic"):
            raise TypeError(f"IAAugmentor wraps an imgaug augmenter (e.g. "
                            f"imgaug.augmenters.Fliplr(0.5)), got {augmentor!r}.")
        self._aug = augmentor
        super().__init__()

    def get_transform(self, img):
        return IAATransform(self._aug.to_deterministic(), img.shape)


class AlbumentationsTransform(Transform):
    """One draw of an albumentations transform: its parameters, applied to any image.

    Example:
        >>> t = Albumentations(A.RandomRotate90(p=1)).get_transform(img)  # doctest: +SKIP
        >>> t.apply_image(img).shape  # doctest: +SKIP
    """

    def __init__(self, aug, param):
        self.aug, self.param = aug, param

    def apply_image(self, img):
        return self.aug.apply(img, **self.param)


class Albumentations(ImageAugmentor):
    """A transform of the albumentations library (https://github.com/albumentations-team/
    albumentations) as a tfloop augmentor, for images only (coordinates are not supported). The
    transform is always applied (its ``p`` is not consulted), with parameters it draws from its
    own random state.

    Example:
        >>> import albumentations as A  # doctest: +SKIP
        >>> aug = Albumentations(A.RandomRotate90(p=1))  # doctest: +SKIP
    """

    def __init__(self, augmentor):
        """
        Args:
            augmentor (albumentations.BasicTransform): the transform to wrap.
        """
        _import("Albumentations", "albumentations", "pip install albumentations")
        if not (hasattr(augmentor, "get_params") and hasattr(augmentor, "apply")):
            raise TypeError(f"Albumentations wraps an albumentations transform (e.g. "
                            f"albumentations.RandomRotate90(p=1)), got {augmentor!r}.")
        self._aug = augmentor
        super().__init__()

    def get_transform(self, img):
        aug = self._aug
        params = aug.get_params()
        data = {"image": img, "shape": img.shape}
        if hasattr(aug, "update_transform_params"):  # albumentations >= 2
            params = aug.update_transform_params(params=params, data=data)
        if hasattr(aug, "get_params_dependent_on_data"):
            params.update(aug.get_params_dependent_on_data(params=params, data=data))
        elif getattr(aug, "targets_as_params", None):  # albumentations 1
            params.update(aug.get_params_dependent_on_targets({"image": img}))
        return AlbumentationsTransform(aug, params)
