"""Augmentors made of augmentors: apply at random, choose one, shuffle the order, or wrap a
plain function."""
import numpy as np

from tfloop.dataflow.imgaug.base import ImageAugmentor
from tfloop.dataflow.imgaug.transform import (
    NoOpTransform,
    TransformFactory,
    TransformList,
)

__all__ = ["Identity", "MapImage", "RandomApplyAug", "RandomChooseAug", "RandomOrderAug"]


class Identity(ImageAugmentor):
    """Does nothing.

    Example:
        >>> import numpy as np
        >>> Identity().augment(np.ones(2)).tolist()
        [1.0, 1.0]
    """

    def get_transform(self, img):
        return NoOpTransform()


class RandomApplyAug(ImageAugmentor):
    """Apply ``aug`` with probability ``prob``, else nothing.

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import imgaug
        >>> RandomApplyAug(imgaug.ToFloat32(), 1.0).augment(np.zeros(1, np.uint8)).dtype
        dtype('float32')
    """

    def __init__(self, aug, prob):
        """
        Args:
            aug (ImageAugmentor): the augmentor.
            prob (float): probability of applying it.
        """
        self.aug, self.prob = aug, prob
        super().__init__()

    def reset_state(self):
        super().reset_state()
        if hasattr(self, "aug"):
            self.aug.reset_state()

    def get_transform(self, img):
        return self.aug.get_transform(img) if self.rng.rand() < self.prob else NoOpTransform()


class _AugmentorGroup(ImageAugmentor):
    """An augmentor that applies some of the augmentors ``self.aug_lists``: resetting it resets
    each of them."""

    def reset_state(self):
        super().reset_state()
        for aug in getattr(self, "aug_lists", ()):
            aug.reset_state()


class RandomChooseAug(_AugmentorGroup):
    """Apply one augmentor chosen at random (uniformly, or with given probabilities).

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import imgaug
        >>> aug = RandomChooseAug([(imgaug.Identity(), 0.5), (imgaug.ToFloat32(), 0.5)])
        >>> aug.augment(np.zeros(1, np.uint8)).shape
        (1,)
    """

    def __init__(self, aug_lists):
        """
        Args:
            aug_lists (list): augmentors, or ``(augmentor, probability)`` pairs.
        """
        if not aug_lists:
            raise ValueError("RandomChooseAug needs a non-empty list of augmentors.")
        if isinstance(aug_lists[0], (tuple, list)):
            self.prob = [p for _, p in aug_lists]
            self.aug_lists = [a for a, _ in aug_lists]
            if not np.isclose(sum(self.prob), 1.0):
                raise ValueError(f"RandomChooseAug: probabilities must sum to 1, got {self.prob}.")
        else:
            self.aug_lists = list(aug_lists)
            self.prob = [1.0 / len(aug_lists)] * len(aug_lists)
        super().__init__()

    def get_transform(self, img):
        return self.aug_lists[self.rng.choice(len(self.aug_lists), p=self.prob)].get_transform(img)


class RandomOrderAug(_AugmentorGroup):
    """Apply all augmentors, in a random order (they must not change the image's shape).

    Example:
        >>> import numpy as np
        >>> from tfloop.dataflow import imgaug
        >>> aug = RandomOrderAug([imgaug.Brightness(10), imgaug.Contrast((0.8, 1.2))])
        >>> aug.augment(np.zeros((2, 2), np.uint8)).shape
        (2, 2)
    """

    def __init__(self, aug_lists):
        """
        Args:
            aug_lists (list): augmentors that keep the image's shape.
        """
        self.aug_lists = list(aug_lists)
        super().__init__()

    def get_transform(self, img):
        order = self.rng.permutation(len(self.aug_lists))
        tfms = [aug.get_transform(img) for aug in self.aug_lists]
        return TransformList([tfms[k] for k in order])


class MapImage(ImageAugmentor):
    """Apply a plain function to the image (and ``coord_func`` to coordinates, if given).

    Example:
        >>> import numpy as np
        >>> MapImage(lambda img: img * 2).augment(np.ones(1)).tolist()
        [2.0]
    """

    def __init__(self, func, coord_func=None):
        """
        Args:
            func: image -> image.
            coord_func: (N, 2) array of (x, y) -> transformed array; without it, coordinates
                cannot be augmented.
        """
        self.func, self.coord_func = func, coord_func
        super().__init__()

    def get_transform(self, img):
        if self.coord_func is not None:
            return TransformFactory(name="MapImage", apply_image=self.func,
                                    apply_coords=self.coord_func)
        return TransformFactory(name="MapImage", apply_image=self.func)
