"""Image operations on OpenCV when it is installed, on numpy otherwise.

OpenCV is imported on first use. The numpy versions follow OpenCV's conventions (pixel centres at
half-integers for resizing, replicated borders for blurring, ITU-R 601 grey weights), so results
agree to rounding; interpolation modes other than nearest fall back to bilinear.
"""
import numpy as np

INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, INTER_AREA = 0, 1, 2, 3

_CV2 = None
_CV2_CHECKED = False
use_opencv = True  # tests turn this off to exercise the numpy versions


def cv2():
    """The cv2 module, or None when OpenCV is not installed (or turned off)."""
    global _CV2, _CV2_CHECKED
    if not use_opencv:
        return None
    if not _CV2_CHECKED:
        _CV2_CHECKED = True
        try:
            import cv2 as module
        except ImportError:
            module = None
        _CV2 = module
    return _CV2


def require_cv2(owner):
    """The cv2 module for ``owner``, which has no numpy version; ImportError when absent."""
    module = cv2()
    if module is None:
        raise ImportError(f"{owner} needs OpenCV, which is not installed: run "
                          "`pip install opencv-python-headless`.")
    return module


def _cast_like(result, dtype):
    if dtype == np.bool_:
        return np.rint(result) != 0
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(result), info.min, info.max).astype(dtype)
    return result.astype(dtype)


# The dtypes OpenCV interpolates as they are; it refuses others (int32 with INTER_LINEAR, bool
# with warpAffine) or changes them (int64 to int32), so those go through float64 and back.
_CV2_DTYPES = {np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32, np.float64)}
_CV2_NEAREST_DTYPES = _CV2_DTYPES | {np.dtype(np.int8), np.dtype(np.int32)}


def _opencv_can_take(img, interp):
    return img.dtype in (_CV2_NEAREST_DTYPES if interp == INTER_NEAREST else _CV2_DTYPES)


def _through_float64(op, img, interp=INTER_LINEAR):
    """``op(img)`` on OpenCV, through a float64 copy (cast back, rounded) when OpenCV cannot take
    ``img``'s dtype with ``interp``: label maps (int32, int64, bool) as well as images."""
    if _opencv_can_take(img, interp):
        return op(img)
    return _cast_like(op(img.astype(np.float64)), img.dtype)


def resize(img, new_h, new_w, interp=INTER_LINEAR):
    """``img`` resized to ``(new_h, new_w)``; keeps a trailing channel axis of size 1."""
    cv = cv2()
    if cv is not None:
        out = _through_float64(
            lambda a: cv.resize(a, (int(new_w), int(new_h)), interpolation=interp), img, interp)
        return out[:, :, np.newaxis] if img.ndim == 3 and out.ndim == 2 else out
    h, w = img.shape[:2]
    if interp == INTER_NEAREST:
        ys = np.minimum((np.arange(new_h) * (h / new_h)).astype(int), h - 1)
        xs = np.minimum((np.arange(new_w) * (w / new_w)).astype(int), w - 1)
        return img[ys][:, xs]
    ys = np.clip((np.arange(new_h) + 0.5) * (h / new_h) - 0.5, 0, h - 1)
    xs = np.clip((np.arange(new_w) + 0.5) * (w / new_w) - 0.5, 0, w - 1)
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    wy = (ys - y0).reshape((-1, 1) + (1,) * (img.ndim - 2)).astype(np.float32)
    wx = (xs - x0).reshape((1, -1) + (1,) * (img.ndim - 2)).astype(np.float32)
    src = img.astype(np.float32)
    top = src[y0][:, x0] * (1 - wx) + src[y0][:, x1] * wx
    bottom = src[y1][:, x0] * (1 - wx) + src[y1][:, x1] * wx
    return _cast_like(top * (1 - wy) + bottom * wy, img.dtype)


_SMALL_KERNELS = {  # OpenCV's fixed kernels for sigma <= 0
    1: [1.0],
    3: [0.25, 0.5, 0.25],
    5: [0.0625, 0.25, 0.375, 0.25, 0.0625],
    7: [0.03125, 0.109375, 0.21875, 0.28125, 0.21875, 0.109375, 0.03125],
}


def _gaussian_kernel(size, sigma):
    if sigma <= 0 and size in _SMALL_KERNELS:
        return np.array(_SMALL_KERNELS[size])
    if sigma <= 0:
        sigma = 0.3 * ((size - 1) * 0.5 - 1) + 0.8
    x = np.arange(size, dtype=np.float64) - (size - 1) / 2
    kernel = np.exp(-x * x / (2 * sigma * sigma))
    return kernel / kernel.sum()


def _convolve_axis(img, kernel, axis):
    radius = len(kernel) // 2
    pad = [(0, 0)] * img.ndim
    pad[axis] = (radius, radius)
    padded = np.pad(img, pad, mode="edge")
    length = img.shape[axis]
    out = np.zeros(img.shape, dtype=np.float64)
    for k, weight in enumerate(kernel):
        out += weight * np.take(padded, np.arange(k, k + length), axis=axis)
    return out


def gaussian_blur(img, size_xy, sigma_xy):
    """Gaussian blur with odd window ``size_xy = (w, h)``, sigmas ``(sx, sy)`` (0: from size)."""
    cv = cv2()
    if cv is not None:
        out = _through_float64(
            lambda a: cv.GaussianBlur(a, tuple(int(s) for s in size_xy),
                                      sigmaX=float(sigma_xy[0]), sigmaY=float(sigma_xy[1]),
                                      borderType=cv.BORDER_REPLICATE), img)
        return out.reshape(img.shape)
    out = img.astype(np.float64)
    out = _convolve_axis(out, _gaussian_kernel(int(size_xy[0]), sigma_xy[0]), axis=1)
    out = _convolve_axis(out, _gaussian_kernel(int(size_xy[1]), sigma_xy[1]), axis=0)
    return _cast_like(out, img.dtype)


def to_gray(img, rgb=True):
    """The grey image (h, w) of an (h, w, 3) RGB (or BGR) image, as float32."""
    weights = np.array([0.299, 0.587, 0.114], dtype=np.float32)
    if not rgb:
        weights = weights[::-1]
    return np.tensordot(img.astype(np.float32), weights, axes=([2], [0]))


BORDER_CONSTANT, BORDER_REPLICATE = 0, 1


def rotation_matrix(center, degrees, scale=1.0):
    """OpenCV's getRotationMatrix2D: a 2x3 matrix rotating by ``degrees`` (counter-clockwise)
    about ``center = (x, y)``."""
    theta = np.deg2rad(degrees)
    a, b = scale * np.cos(theta), scale * np.sin(theta)
    cx, cy = center
    return np.array([[a, b, (1 - a) * cx - b * cy], [-b, a, b * cx + (1 - a) * cy]])


def warp_affine(img, mat, dsize, interp=INTER_LINEAR, border=BORDER_CONSTANT, value=0):
    """``img`` mapped by the 2x3 matrix ``mat`` (source to destination) into an image of
    ``dsize = (w, h)``; borders replicated or filled with ``value``."""
    cv = cv2()
    if cv is not None:
        fill = (value,) * 4 if np.isscalar(value) else tuple(value)  # every channel, not one
        out = _through_float64(
            lambda a: cv.warpAffine(a, np.asarray(mat, np.float64), tuple(int(v) for v in dsize),
                                    flags=interp, borderMode=border, borderValue=fill),
            img, interp)
        return out[:, :, np.newaxis] if img.ndim == 3 and out.ndim == 2 else out
    full = np.vstack([np.asarray(mat, np.float64), [0, 0, 1]])
    inverse = np.linalg.inv(full)[:2]
    w, h = int(dsize[0]), int(dsize[1])
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    sx = inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]
    sy = inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]
    src_h, src_w = img.shape[:2]
    inside = (sx > -1) & (sx < src_w) & (sy > -1) & (sy < src_h)
    src = img.astype(np.float32)
    if interp == INTER_NEAREST:
        out = src[np.clip(np.rint(sy), 0, src_h - 1).astype(int),
                  np.clip(np.rint(sx), 0, src_w - 1).astype(int)]
        inside = (np.rint(sx) >= 0) & (np.rint(sx) < src_w) & (np.rint(sy) >= 0) \
            & (np.rint(sy) < src_h)
    else:
        x0, y0 = np.floor(sx), np.floor(sy)
        wx, wy = sx - x0, sy - y0
        if img.ndim == 3:
            wx, wy = wx[..., None], wy[..., None]

        def at(yy, xx):
            pixels = src[np.clip(yy, 0, src_h - 1).astype(int),
                         np.clip(xx, 0, src_w - 1).astype(int)]
            if border == BORDER_CONSTANT:
                outside = (xx < 0) | (xx >= src_w) | (yy < 0) | (yy >= src_h)
                pixels[outside] = value
            return pixels
        out = ((at(y0, x0) * (1 - wx) + at(y0, x0 + 1) * wx) * (1 - wy)
               + (at(y0 + 1, x0) * (1 - wx) + at(y0 + 1, x0 + 1) * wx) * wy)
    if border == BORDER_CONSTANT:
        out[~inside] = value
    return _cast_like(out, img.dtype)
