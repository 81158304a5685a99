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


def _cast_like(result, dtype):
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(result), info.min, info.max).astype(dtype)
    return result.astype(dtype)


def resize(img, new_h, new_w, interp=INTER_LINEAR):
    """``img`` resized to ``(new_h, new_w)``; keeps a trailing channel axis of size 1."""
    cv = cv2()
    if cv is not None:
        out = cv.resize(img, (int(new_w), int(new_h)), interpolation=interp)
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
        out = cv.GaussianBlur(img, tuple(int(s) for s in size_xy), sigmaX=float(sigma_xy[0]),
                              sigmaY=float(sigma_xy[1]), borderType=cv.BORDER_REPLICATE)
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
