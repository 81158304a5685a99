"""Deterministic transforms: what an augmentor decided to do to one image, applied to that image
and to data tied to it (another image of the same size, (x, y) coordinates)."""
import numpy as np

from tfloop.dataflow.imgaug import _backend

__all__ = [
    "CropTransform",
    "FlipTransform",
    "LazyTransform",
    "NoOpTransform",
    "PhotometricTransform",
    "ResizeTransform",
    "Transform",
    "TransformFactory",
    "TransformList",
    "TransposeTransform",
    "WarpAffineTransform",
]


class Transform:
    """A deterministic image transformation. Subclasses implement ``apply_image(img)`` and, when
    it makes sense, ``apply_coords(coords)`` on an ``(N, 2)`` float array of ``(x, y)`` rows.

    Example:
        >>> import numpy as np
        >>> CropTransform(0, 1, 2, 2).apply_image(np.arange(9).reshape(3, 3)).tolist()
        [[1, 2], [4, 5]]
    """

    def apply_image(self, img):
        raise NotImplementedError(f"{type(self).__name__} does not implement apply_image.")

    def apply_coords(self, coords):
        raise NotImplementedError(f"{type(self).__name__} cannot transform coordinates.")

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"imgaug.{type(self).__name__}({fields})"


class NoOpTransform(Transform):
    """Leaves images and coordinates as they are.

    Example:
        >>> NoOpTransform().apply_coords([[1.0, 2.0]])
        [[1.0, 2.0]]
    """

    def apply_image(self, img):
        return img

    def apply_coords(self, coords):
        return coords


class CropTransform(Transform):
    """Crop the ``h`` x ``w`` window whose top-left corner is ``(y0, x0)``.

    Example:
        >>> import numpy as np
        >>> CropTransform(1, 1, 1, 1).apply_coords(np.array([[2.0, 3.0]])).tolist()
        [[1.0, 2.0]]
    """

    def __init__(self, y0, x0, h, w):
        self.y0, self.x0, self.h, self.w = int(y0), int(x0), int(h), int(w)

    def apply_image(self, img):
        return img[self.y0:self.y0 + self.h, self.x0:self.x0 + self.w]

    def apply_coords(self, coords):
        coords[:, 0] -= self.x0
        coords[:, 1] -= self.y0
        return coords


class ResizeTransform(Transform):
    """Resize from ``(h, w)`` to ``(new_h, new_w)`` (OpenCV interpolation codes).

    Example:
        >>> import numpy as np
        >>> ResizeTransform(2, 2, 4, 6, 1).apply_image(np.zeros((2, 2), np.uint8)).shape
        (4, 6)
    """

    def __init__(self, h, w, new_h, new_w, interp=_backend.INTER_LINEAR):
        self.h, self.w, self.new_h, self.new_w = int(h), int(w), int(new_h), int(new_w)
        self.interp = interp

    def apply_image(self, img):
        if img.shape[:2] != (self.h, self.w):
            raise ValueError(f"ResizeTransform was made for images of size {(self.h, self.w)}, "
                             f"got an image of shape {img.shape}.")
        return _backend.resize(img, self.new_h, self.new_w, self.interp)

    def apply_coords(self, coords):
        coords[:, 0] = coords[:, 0] * (self.new_w / self.w)
        coords[:, 1] = coords[:, 1] * (self.new_h / self.h)
        return coords


class FlipTransform(Transform):
    """Mirror an ``h`` x ``w`` image left-right (``horiz=True``) or upside-down.

    Example:
        >>> import numpy as np
        >>> FlipTransform(1, 3).apply_image(np.array([[1, 2, 3]])).tolist()
        [[3, 2, 1]]
    """

    def __init__(self, h, w, horiz=True):
        self.h, self.w, self.horiz = int(h), int(w), horiz

    def apply_image(self, img):
        return img[:, ::-1] if self.horiz else img[::-1]

    def apply_coords(self, coords):
        if self.horiz:
            coords[:, 0] = self.w - coords[:, 0]
        else:
            coords[:, 1] = self.h - coords[:, 1]
        return coords


class TransposeTransform(Transform):
    """Swap the two image axes.

    Example:
        >>> import numpy as np
        >>> TransposeTransform().apply_image(np.zeros((2, 3))).shape
        (3, 2)
    """

    def apply_image(self, img):
        return np.swapaxes(img, 0, 1)

    def apply_coords(self, coords):
        return coords[:, ::-1].copy()


class WarpAffineTransform(Transform):
    """Map the image by a 2x3 affine matrix ``mat`` into an image of ``dsize = (w, h)``.

    Example:
        >>> import numpy as np
        >>> t = WarpAffineTransform(np.array([[1.0, 0, 1], [0, 1.0, 0]]), (3, 1))
        >>> t.apply_image(np.array([[1, 2, 3]], np.uint8)).tolist()
        [[0, 1, 2]]
    """

    def __init__(self, mat, dsize, interp=_backend.INTER_LINEAR,
                 borderMode=_backend.BORDER_CONSTANT, borderValue=0):
        self.mat, self.dsize = np.asarray(mat, np.float64), tuple(dsize)
        self.interp, self.borderMode, self.borderValue = interp, borderMode, borderValue

    def apply_image(self, img):
        return _backend.warp_affine(img, self.mat, self.dsize, self.interp, self.borderMode,
                                    self.borderValue)

    def apply_coords(self, coords):
        return coords @ self.mat[:, :2].T + self.mat[:, 2]


class PhotometricTransform(Transform):
    """Changes pixel values with ``func``; coordinates stay as they are.

    Example:
        >>> import numpy as np
        >>> PhotometricTransform(lambda img: img + 1).apply_image(np.zeros(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, func, name=None):
        self.func, self.name = func, name

    def apply_image(self, img):
        return self.func(img)

    def apply_coords(self, coords):
        return coords


class TransformFactory(Transform):
    """A Transform from functions given as keyword arguments (``apply_image=...``, ...).

    Example:
        >>> import numpy as np
        >>> TransformFactory(name="double", apply_image=lambda img: 2 * img).apply_image(np.ones(1))
        array([2.])
    """

    def __init__(self, name=None, **kwargs):
        self.name = name
        for key, func in kwargs.items():
            if not key.startswith("apply_"):
                raise ValueError(f"TransformFactory takes apply_* functions, got {key}=.")
            setattr(self, key, func)

    def __repr__(self):
        return f"imgaug.TransformFactory(name={self.name!r})"


class TransformList(Transform):
    """Several transforms applied in order.

    Example:
        >>> import numpy as np
        >>> t = TransformList([CropTransform(0, 0, 2, 2), FlipTransform(2, 2)])
        >>> t.apply_image(np.arange(9).reshape(3, 3)).tolist()
        [[1, 0], [4, 3]]
    """

    def __init__(self, tfms):
        self.tfms = list(tfms)

    def apply_image(self, img):
        for t in self.tfms:
            img = t.apply_image(img)
        return img

    def apply_coords(self, coords):
        for t in self.tfms:
            coords = t.apply_coords(coords)
        return coords


class LazyTransform(Transform):
    """Made from ``get_transform(img)``: decides its transform from the first image it sees (the
    output of the previous step), then applies that same transform to everything else.

    Example:
        >>> import numpy as np
        >>> t = LazyTransform(lambda img: CropTransform(0, 0, 1, 1))
        >>> t.apply_image(np.ones((3, 3))).shape
        (1, 1)
    """

    def __init__(self, get_transform):
        self.get_transform = get_transform
        self._transform = None

    def apply_image(self, img):
        if self._transform is None:
            self._transform = self.get_transform(img)
        return self._transform.apply_image(img)

    def apply_coords(self, coords):
        if self._transform is None:
            raise RuntimeError("LazyTransform: apply_image must be called before apply_coords "
                               "(the transform depends on the image).")
        return self._transform.apply_coords(coords)
