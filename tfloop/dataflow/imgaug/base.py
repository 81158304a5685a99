"""Augmentors: random policies that, given an image, pick a deterministic Transform."""
import numpy as np

from tfloop.dataflow.imgaug.transform import (
    LazyTransform,
    PhotometricTransform,
    Transform,
    TransformFactory,
    TransformList,
)
from tfloop.utils.rng import get_rng, reseed_after_fork

__all__ = ["Augmentor", "AugmentorList", "ImageAugmentor", "PhotometricAugmentor"]


def check_dtype(img):
    """Refuse what is not an image augmentors can take: an array of numbers or booleans.

    Images are uint8 or floating point; label maps and masks of any integer type or bool pass
    through the geometric augmentors (as in tensorpack, whose dtype check never refused them).
    """
    if not isinstance(img, np.ndarray):
        raise TypeError(f"Augmentors take a numpy array, got {type(img).__name__}.")
    if img.dtype.kind not in "biuf":
        raise TypeError(f"Augmentors take arrays of numbers (uint8 or floating-point images, "
                        f"integer or bool label maps), got dtype {img.dtype}; convert it, e.g. "
                        "img.astype('float32').")


def _as_transform(param):
    if not isinstance(param, Transform):
        raise TypeError(f"augment_with_params / augment_coords take the Transform returned by "
                        f"augment_return_params, got {param!r}.")
    return param


class ImageAugmentor:
    """Base class of augmentors. ``get_transform(img)`` draws the random choices (from
    ``self.rng``) and returns a :class:`Transform`; ``augment(img)`` applies it at once.

    Images are uint8 in [0, 255] or floating point. ``self.rng`` is re-seeded by
    ``reset_state()``, which DataFlows call in each process (and which runs after every fork),
    so forked workers draw different numbers. Augmentors written for tensorpack's older interface
    (``_get_augment_params(img)`` and ``_augment(img, params)``) work too.

    Example:
        >>> import numpy as np
        >>> class AddOne(ImageAugmentor):
        ...     def get_transform(self, img):
        ...         return PhotometricTransform(lambda x: x + 1)
        >>> AddOne().augment(np.zeros((2, 2), np.float32)).tolist()
        [[1.0, 1.0], [1.0, 1.0]]
    """

    def __init__(self):
        self.reset_state()
        reseed_after_fork(self)

    def __getattr__(self, name):
        if name == "rng":  # a subclass that did not call super().__init__()
            self.reset_state()
            reseed_after_fork(self)
            return self.rng
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}.")

    def _init(self, params=None):
        for key, value in (params or {}).items():
            if key != "self" and not key.startswith("_"):
                setattr(self, key, value)

    def reset_state(self):
        """Give the augmentor a fresh RNG (called by DataFlows in the process that uses it)."""
        self.rng = get_rng(self)

    def _rand_range(self, low=1.0, high=None, size=None):
        if high is None:
            low, high = 0, low
        return np.float32(self.rng.uniform(low, high)) if size is None else \
            self.rng.uniform(low, high, size).astype("float32")

    def get_transform(self, img) -> Transform:
        """Draw this augmentor's random choices for ``img`` and return them as a Transform."""
        if not hasattr(type(self), "_augment"):
            raise NotImplementedError(f"{type(self).__name__} must implement get_transform(img).")
        params = self._get_augment_params(img) if hasattr(self, "_get_augment_params") else None
        if isinstance(params, Transform):
            return params
        coords = getattr(self, "_augment_coords", None)
        return TransformFactory(
            name=f"from {type(self).__name__}",
            apply_image=lambda image: self._augment(image, params),
            apply_coords=(lambda c: coords(c, params)) if coords else (lambda c: c))

    def augment(self, img):
        """Augment one image with a freshly drawn transform."""
        check_dtype(img)
        return self.get_transform(img).apply_image(img)

    def augment_return_params(self, img):
        """tensorpack's older interface: ``(augmented img, transform)``; the transform applies
        the same augmentation to other data (``augment_with_params``, ``augment_coords``)."""
        check_dtype(img)
        transform = self.get_transform(img)
        return transform.apply_image(img), transform

    def augment_with_params(self, img, param):
        """tensorpack's older interface: ``param.apply_image(img)`` for a transform ``param``
        from :meth:`augment_return_params`."""
        return _as_transform(param).apply_image(img)

    def augment_coords(self, coords, param):
        """tensorpack's older interface: ``param.apply_coords(coords)`` (Nx2 ``[x, y]``)."""
        return _as_transform(param).apply_coords(coords)

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items()
                           if not k.startswith("_") and k != "rng")
        return f"imgaug.{type(self).__name__}({fields})"


Augmentor = ImageAugmentor


class PhotometricAugmentor(ImageAugmentor):
    """An augmentor that only changes pixel values (coordinates pass unchanged): subclasses
    implement ``_get_augment_params(img)`` (optional) and ``_augment(img, params)``.

    Example:
        >>> import numpy as np
        >>> class Invert(PhotometricAugmentor):
        ...     def _augment(self, img, _):
        ...         return 255 - img
        >>> Invert().augment(np.zeros(2, np.uint8)).tolist()
        [255, 255]
    """

    def _get_augment_params(self, img):
        return None

    def get_transform(self, img):
        params = self._get_augment_params(img)
        return PhotometricTransform(lambda image: self._augment(image, params),
                                    name=f"from {type(self).__name__}")


class AugmentorList(ImageAugmentor):
    """Applies several augmentors in order; each decides from the output of the previous one.

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import imgaug
        >>> augs = AugmentorList([imgaug.CenterCrop(2), imgaug.Flip(horiz=True, prob=1.0)])
        >>> augs.augment(np.arange(9).reshape(3, 3).astype(np.uint8)).tolist()
        [[1, 0], [4, 3]]
    """

    def __init__(self, augmentors):
        """
        Args:
            augmentors (list): ImageAugmentor instances.
        """
        if not isinstance(augmentors, (list, tuple)):
            raise TypeError(f"AugmentorList needs a list of augmentors, got {augmentors!r}.")
        for aug in augmentors:
            if not isinstance(aug, ImageAugmentor):
                raise TypeError(f"AugmentorList: {aug!r} is not an ImageAugmentor (e.g. "
                                "imgaug.Flip(horiz=True)).")
        self.augmentors = list(augmentors)
        super().__init__()

    def reset_state(self):
        super().reset_state()
        for aug in getattr(self, "augmentors", ()):
            aug.reset_state()

    def get_transform(self, img):
        check_dtype(img)
        if img.ndim not in (2, 3):
            raise ValueError(f"Augmentors take (h, w) or (h, w, c) images, got shape {img.shape}.")
        tfms = []
        for k, aug in enumerate(self.augmentors):
            t = aug.get_transform(img) if k == 0 else LazyTransform(aug.get_transform)
            tfms.extend(t.tfms if isinstance(t, TransformList) else [t])
        return TransformList(tfms)

    def __repr__(self):
        inner = ",\n".join(f"  {a!r}" for a in self.augmentors)
        return f"imgaug.AugmentorList([\n{inner}])"

