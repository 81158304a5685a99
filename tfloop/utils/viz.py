"""Image visualization helpers (tensorpack's ``utils.viz``): grids of patches, heatmaps, boxes.

Images are numpy arrays in [0, 255], BGR as OpenCV reads them. Drawing needs OpenCV and
``intensity_to_rgb`` needs matplotlib: ``pip install 'tfloop-train[viz]'``.
"""
import os
import sys

import numpy as np

from tfloop.utils.argtools import shape2d
from tfloop.utils.optional import require

__all__ = ["interactive_imshow", "stack_patches", "gen_stack_patches", "dump_dataflow_images",
           "intensity_to_rgb", "draw_text", "draw_boxes"]

_WINDOW = "tfloop_viz_window"
_ZOOM_KEYS = {"+": 1.3, "=": 1.3, "-": 0.7}


def _cv2():
    return require("cv2", "viz", "tfloop.utils.viz")


def interactive_imshow(img, lclick_cb=None, rclick_cb=None, **kwargs):
    """Show a BGR image in an OpenCV window and wait for a key.

    Keys: ``q`` closes the window, ``x`` exits the process, ``s`` writes ``out.png``, ``+``/``-``
    zoom; ``key_cb_<k>=func(img)`` in ``kwargs`` handles key ``k`` instead.

    Args:
        img (np.ndarray): the image.
        lclick_cb, rclick_cb: ``func(img, x, y)`` called on a left / right click.

    Example:
        >>> interactive_imshow(stack_patches(images, 4, 4), key_cb_p=lambda im: print(im.shape))
    """
    cv2 = _cv2()
    cv2.imshow(_WINDOW, img)

    def on_mouse(event, x, y, *_):
        if event == cv2.EVENT_LBUTTONUP and lclick_cb is not None:
            lclick_cb(img, x, y)
        elif event == cv2.EVENT_RBUTTONUP and rclick_cb is not None:
            rclick_cb(img, x, y)

    cv2.setMouseCallback(_WINDOW, on_mouse)
    code = cv2.waitKey(-1)
    while code >= 128:
        code = cv2.waitKey(-1)
    key = chr(code & 0xFF)
    if f"key_cb_{key}" in kwargs:
        kwargs[f"key_cb_{key}"](img)
    elif key == "q":
        cv2.destroyWindow(_WINDOW)
    elif key == "x":
        sys.exit()
    elif key == "s":
        cv2.imwrite("out.png", img)
    elif key in _ZOOM_KEYS:
        factor = _ZOOM_KEYS[key]
        zoomed = cv2.resize(img, None, fx=factor, fy=factor, interpolation=cv2.INTER_CUBIC)
        interactive_imshow(zoomed, lclick_cb, rclick_cb, **kwargs)


def _as_patch_array(patches):
    """NHWC uint8-compatible array from a list or array of HW / HWC patches of one shape."""
    try:
        array = np.asarray(patches)
    except ValueError:
        array = np.empty(0, dtype=object)
    if array.dtype == object:
        raise ValueError("stack_patches: the patches differ in shape; pass pad=True to pad them "
                         "to the largest one.")
    if array.ndim == 3:
        array = array[..., np.newaxis]
    if array.ndim != 4 or array.shape[3] not in (1, 3):
        raise ValueError(f"stack_patches needs NHW or NHWC patches with 1 or 3 channels, got "
                         f"shape {array.shape}.")
    return array


def _pad_to_largest(patches, bgcolor):
    color = (bgcolor,) * 3 if isinstance(bgcolor, int) else tuple(bgcolor)
    patches = [np.asarray(p) for p in patches]
    patches = [p[..., np.newaxis] if p.ndim == 2 else p for p in patches]
    patches = [np.repeat(p, 3, axis=2) if p.shape[2] == 1 else p for p in patches]
    height = max(p.shape[0] for p in patches)
    width = max(p.shape[1] for p in patches)
    out = np.empty((len(patches), height, width, 3), dtype=patches[0].dtype)
    out[...] = color
    for i, p in enumerate(patches):
        top, left = (height - p.shape[0]) // 2, (width - p.shape[1]) // 2
        out[i, top:top + p.shape[0], left:left + p.shape[1]] = p
    return out


class _Grid:
    """A canvas of ``rows x cols`` cells of ``height x width`` separated by ``border`` pixels."""

    def __init__(self, height, width, rows, cols, channels, border, bgcolor):
        self.height, self.width, self.rows, self.cols = height, width, rows, cols
        self.border = int(0.05 * min(height, width)) if border is None else border
        self.bgcolor = bgcolor
        self.channels = max(channels, 1 if isinstance(bgcolor, int) else 3)
        self.canvas = np.zeros((rows * (height + self.border) - self.border,
                                cols * (width + self.border) - self.border, self.channels),
                               dtype="uint8")

    def draw(self, patches):
        if len(patches) > self.rows * self.cols:
            raise ValueError(f"stack_patches: {len(patches)} patches do not fit in a "
                             f"{self.rows}x{self.cols} grid.")
        if self.channels == 3 and patches.shape[3] == 1:
            patches = np.repeat(patches, 3, axis=3)
        self.canvas[...] = self.bgcolor
        for i, patch in enumerate(patches):
            top = (i // self.cols) * (self.height + self.border)
            left = (i % self.cols) * (self.width + self.border)
            self.canvas[top:top + self.height, left:left + self.width] = patch

    def index_at(self, x, y):
        return (y // (self.height + self.border)) * self.cols + x // (self.width + self.border)


def _click_handler(grid, patches, lclick_cb, offset=0):
    """``func(img, x, y)`` calling ``lclick_cb(patch, index)`` for the patch clicked, or None."""
    if lclick_cb is None:
        return None

    def on_click(img, x, y):
        index = offset + grid.index_at(x, y)
        if index < len(patches):
            lclick_cb(patches[index], index)
    return on_click


def stack_patches(patch_list, nr_row, nr_col, border=None, pad=False, bgcolor=255, viz=False,
                  lclick_cb=None):
    """Arrange images in a ``nr_row x nr_col`` grid, row by row, on a ``bgcolor`` background.

    Args:
        patch_list (list[np.ndarray] or np.ndarray): NHW or NHWC images in [0, 255].
        nr_row, nr_col (int): the grid; ``nr_row * nr_col >= len(patch_list)``.
        border (int): pixels between cells; 5% of the smaller patch side by default.
        pad (bool): pad patches of different shapes to the largest one (centered).
        bgcolor (int or tuple): background, a gray level or a BGR triple.
        viz (bool): also show the grid with :func:`interactive_imshow`.
        lclick_cb: ``func(patch, index)`` called when a patch is clicked (implies ``viz``).

    Returns:
        np.ndarray: the grid, uint8, HWC.

    Example:
        >>> grid = stack_patches(np.zeros((6, 28, 28)), nr_row=2, nr_col=3)   # (57, 87, 1)
    """
    if pad:
        patch_list = _pad_to_largest(patch_list, bgcolor)
    patches = _as_patch_array(patch_list)
    grid = _Grid(patches.shape[1], patches.shape[2], nr_row, nr_col, patches.shape[3], border,
                 bgcolor)
    grid.draw(patches)
    if viz or lclick_cb is not None:
        interactive_imshow(grid.canvas, lclick_cb=_click_handler(grid, patches, lclick_cb))
    return grid.canvas


def gen_stack_patches(patch_list, nr_row=None, nr_col=None, border=None, max_width=1000,
                      max_height=1000, bgcolor=255, viz=False, lclick_cb=None):
    """Like :func:`stack_patches` for a long list: yield one grid per ``nr_row * nr_col`` patches.

    Args:
        nr_row, nr_col (int): the grid; when None, as many as fit in ``max_height`` /
            ``max_width`` pixels.
        patch_list, border, bgcolor, viz, lclick_cb: as in :func:`stack_patches`.

    Yields:
        np.ndarray: each grid (the same array, redrawn: copy it to keep it).

    Example:
        >>> for grid in gen_stack_patches(images, nr_row=10, nr_col=10):
        ...     cv2.imwrite(f"grid{i}.png", grid)
    """
    patches = _as_patch_array(patch_list)
    height, width = patches.shape[1:3]
    border = int(0.05 * min(height, width)) if border is None else border
    nr_row = int(max_height / (height + border)) if nr_row is None else nr_row
    nr_col = int(max_width / (width + border)) if nr_col is None else nr_col
    grid = _Grid(height, width, nr_row, nr_col, patches.shape[3], border, bgcolor)
    per_grid = nr_row * nr_col
    for start in range(0, len(patches), per_grid):
        chunk = patches[start:start + per_grid]
        grid.draw(chunk)
        if viz or lclick_cb is not None:
            on_click = _click_handler(grid, patches[:start + len(chunk)], lclick_cb, start)
            interactive_imshow(grid.canvas, lclick_cb=on_click)
        yield grid.canvas


def _prepare(img, scale, resize, flip_rgb):
    if scale != 1:
        img = img * scale
    if resize is not None:
        img = _cv2().resize(img, resize)
    return img[:, :, ::-1] if flip_rgb else img


def dump_dataflow_images(df, index=0, batched=True, number=1000, output_dir=None, scale=1,
                         resize=None, viz=None, flipRGB=False):
    """Write (and/or show in grids) the images of component ``index`` of a DataFlow.

    Args:
        df (DataFlow): the flow (reset here).
        index (int): the image component.
        batched (bool): the component holds NHW(C) batches rather than one HW(C) image.
        number (int): stop after this many images.
        output_dir (str): write ``001.jpg``, ``002.jpg``, ... there (nothing written when None).
        scale (float): multiply the images by it (e.g. 255 for images in [0, 1]).
        resize (tuple): ``(h, w)`` to resize to.
        viz (tuple): ``(rows, cols)``: show each full grid with :func:`interactive_imshow`.
        flipRGB (bool): swap RGB and BGR.

    Example:
        >>> dump_dataflow_images(BatchData(ds, 16), output_dir="samples", number=32)
    """
    if output_dir:
        os.makedirs(output_dir, exist_ok=True)
    grid = shape2d(viz) if viz is not None else None
    resize = tuple(shape2d(resize)) if resize is not None else None
    pending = []
    count = 0
    df.reset_state()
    while True:
        for datapoint in df:
            for img in (datapoint[index] if batched else [datapoint[index]]):
                count += 1
                if count > number:
                    return
                img = _prepare(img, scale, resize, flipRGB)
                if output_dir:
                    _cv2().imwrite(os.path.join(output_dir, f"{count:03d}.jpg"), img)
                if grid is not None:
                    pending.append(img)
            if grid is not None and len(pending) >= grid[0] * grid[1]:
                stack_patches(pending[:grid[0] * grid[1]], nr_row=grid[0], nr_col=grid[1],
                              viz=True)
                pending = pending[grid[0] * grid[1]:]


def intensity_to_rgb(intensity, cmap="cubehelix", normalize=False):
    """Color a 2-D array of intensities in [0, 1] with a matplotlib colormap.

    Args:
        intensity (np.ndarray): HW intensities (e.g. a saliency map).
        cmap (str): the matplotlib colormap's name.
        normalize (bool): first rescale the values to [0, 1] (min to 0, max to 1).

    Returns:
        np.ndarray: HxWx3 float32 RGB in [0, 255].

    Example:
        >>> heatmap = intensity_to_rgb(saliency, cmap="jet", normalize=True)[:, :, ::-1]  # BGR
    """
    intensity = np.asarray(intensity, dtype="float64")
    if intensity.ndim != 2:
        raise ValueError(f"intensity_to_rgb needs a 2-D array, got shape {intensity.shape}.")
    if normalize:
        intensity = intensity - intensity.min()
        peak = intensity.max()
        intensity = intensity / peak if peak > 0 else intensity
    colormaps = require("matplotlib", "viz", "intensity_to_rgb").colormaps
    return (colormaps[cmap](intensity)[..., :3] * 255.0).astype("float32")


def draw_text(img, pos, text, color, font_scale=0.4):
    """Write ``text`` in light gray on a ``color`` box whose bottom-left corner is ``pos``.

    The box is moved inside the image where it would stick out.

    Args:
        img (np.ndarray): the image (a uint8 copy is drawn on and returned).
        pos (tuple): ``(x, y)``.
        text (str): the text.
        color (tuple): BGR of the box, in [0, 255].
        font_scale (float): OpenCV's font scale.

    Returns:
        np.ndarray: the uint8 image with the text.

    Example:
        >>> img = draw_text(img, (10, 20), "person 0.93", color=(15, 128, 15))
    """
    cv2 = _cv2()
    img = img.astype(np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    (text_w, text_h), _ = cv2.getTextSize(text, font, font_scale, 1)
    x0 = min(int(pos[0]), img.shape[1] - text_w)
    y0 = max(int(pos[1]), int(1.15 * text_h))
    cv2.rectangle(img, (x0, y0 - int(1.3 * text_h)), (x0 + text_w, y0), color, -1)
    cv2.putText(img, text, (x0, y0 - int(0.25 * text_h)), font, font_scale, (222, 222, 222),
                lineType=cv2.LINE_AA)
    return img


def _check_boxes(boxes, labels, shape):
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ValueError(f"draw_boxes needs boxes of shape (N, 4), got {boxes.shape}.")
    if labels is not None and len(labels) != len(boxes):
        raise ValueError(f"draw_boxes: {len(labels)} labels for {len(boxes)} boxes.")
    if not len(boxes):
        return
    if ((boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)).min() <= 0:
        raise ValueError(f"draw_boxes: a box has x2 < x1 or y2 < y1:\n{boxes}")
    if boxes[:, :2].min() < 0 or boxes[:, 2].max() > shape[1] or boxes[:, 3].max() > shape[0]:
        raise ValueError(f"draw_boxes: a box lies outside the image of shape {shape}:\n{boxes}")


def draw_boxes(im, boxes, labels=None, color=None):
    """Draw boxes ``[x1, y1, x2, y2]`` (and their labels) on a copy of ``im``, largest first.

    Args:
        im (np.ndarray): a BGR (or gray) image in [0, 255]; not modified.
        boxes (np.ndarray): Nx4 boxes inside the image.
        labels (list[str]): one per box, or None.
        color (tuple): BGR in [0, 255]; dark green by default.

    Returns:
        np.ndarray: a new BGR image.

    Example:
        >>> out = draw_boxes(img, [[10, 10, 50, 40]], ["cat"])
    """
    cv2 = _cv2()
    boxes = np.asarray(boxes, dtype="int32")
    if boxes.size == 0:
        boxes = boxes.reshape(0, 4)
    _check_boxes(boxes, labels, im.shape)
    color = (15, 128, 15) if color is None else color
    im = im.copy()
    if im.ndim == 2 or im.shape[2] == 1:
        im = cv2.cvtColor(im, cv2.COLOR_GRAY2BGR)
    areas = (boxes[:, 2] - boxes[:, 0] + 1) * (boxes[:, 3] - boxes[:, 1] + 1)
    for i in np.argsort(-areas):
        x1, y1, x2, y2 = (int(v) for v in boxes[i])
        if labels is not None:
            im = draw_text(im, (x1, y1), labels[i], color=color)
        cv2.rectangle(im, (x1, y1), (x2, y2), color=color, thickness=1)
    return im
