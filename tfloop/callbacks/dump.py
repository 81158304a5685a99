"""Saving the values of tensors, fetched along with a training step, into the log directory."""
import io
import os
import struct
import zlib

import numpy as np

from tfloop.callbacks.base import Callback
from tfloop.callbacks.trainer_view import expects_last_step
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.utils import logger
from tfloop.utils.checks import check_callable, check_number
from tfloop.utils.fs import atomic_write

__all__ = ["DumpTensors", "DumpTensorAsImage", "DumpTensor", "DumpParamAsImage", "encode_png"]

_PNG_COLOR_TYPES = {1: 0, 3: 2, 4: 6}


def encode_png(image):
    """Encode a uint8 image of shape HW or HWC (C = 1, 3 or 4) as PNG bytes (no TensorFlow).

    Example:
        >>> atomic_write("mask.png", encode_png(np.zeros((8, 8), np.uint8)))
    """
    image = np.asarray(image)
    if image.ndim == 2:
        image = image[:, :, np.newaxis]
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _PNG_COLOR_TYPES:
        raise ValueError("encode_png needs a uint8 image of shape HW or HWC with 1, 3 or 4 "
                         f"channels, got {image.dtype} of shape {image.shape}.")
    height, width, channels = image.shape
    rows = np.ascontiguousarray(image).reshape(height, width * channels)
    raw = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1).tobytes()

    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPES[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def _require_log_dir(callback):
    log_dir = callback.trainer.logdir
    if log_dir is None:
        raise ValueError(f"{callback} writes into the log directory, but none is set: call "
                         "tfloop.logger.set_logger_dir(...) before training.")
    return log_dir


class _StepDumper(Callback):
    """Fetch tensors along with the last step of each epoch (or every step), then write them."""

    def __init__(self, every_step):
        self.every_step = bool(every_step)
        self._fetches = None
        self.log_dir = None

    def _due(self):
        return self.every_step or expects_last_step(self.trainer)

    def _before_run(self, ctx):
        return self._fetches if self._due() else None

    def _dump(self, results):
        """Write ``results`` (this step's fetched values) into the log directory."""
        raise NotImplementedError(f"{type(self).__name__} must implement _dump(results).")

    def _after_run(self, ctx, values):
        if values.results is None:
            return
        try:
            self._dump(values.results)
        except OSError as e:
            logger.error(f"{self} could not write its dump at global step {self.global_step}: {e}")


class DumpTensors(_StepDumper):
    """Save the values of some tensors to ``DumpTensor-<global_step>.npz`` in the log directory.

    The tensors are fetched along with the last training step of every epoch (no extra
    ``session.run``) and the file is named after the global step once that step finished. Choose
    other epochs with ``PeriodicCallback(..., every_k_epochs=k)`` or ``EnableCallbackIf``. With
    ``every_step=True`` it dumps along with every step it runs for, so that
    ``PeriodicCallback(DumpTensors(names, every_step=True), every_k_steps=k)`` dumps every k steps.
    Load a dump with ``dict(np.load(path))``; its keys are the names as given.

    Args:
        names (list[str]): tensor names, looked up in the graph, then in the first training tower.
        every_step (bool): dump along with every step instead of the last step of each epoch.

    Example:
        >>> DumpTensors(["cost", "logits"])  # train_log/x/DumpTensor-300.npz, DumpTensor-600.npz...
    """

    def __init__(self, names, every_step=False):
        super().__init__(every_step)
        if isinstance(names, str):
            names = [names]
        names = list(names)
        if not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError(f"DumpTensors needs a list of tensor names, got {names!r}.")
        if len(set(names)) != len(names):
            raise ValueError(f"DumpTensors names must be unique, got {names!r}.")
        self.names = names

    def _setup_graph(self):
        self.log_dir = _require_log_dir(self)
        self._fetches = self.get_tensors_maybe_in_tower(self.names)

    def _dump(self, results):
        buffer = io.BytesIO()
        np.savez(buffer, **dict(zip(self.names, results)))
        atomic_write(os.path.join(self.log_dir, f"DumpTensor-{self.global_step}.npz"),
                     buffer.getvalue())

    def __str__(self):
        return f"DumpTensors({self.names})"


class DumpTensorAsImage(_StepDumper):
    """Save a tensor as PNG images in the log directory and put them to the monitors.

    Fetched along with the last step of each epoch, like :class:`DumpTensors`. The value (after
    ``map_func``) is one image of shape HW or HWC, or a batch (NHWC, or a list of images); it is
    multiplied by ``scale`` and clipped to [0, 255]. Files are ``<prefix>-<global_step>.png``, or
    ``<prefix>-<global_step>-<i>.png`` for the i-th image of a batch.

    Args:
        name (str): the tensor's name.
        prefix (str): file name prefix and monitor name; the tensor's op name (``/`` -> ``_``) by
            default.
        map_func (callable): applied to the fetched numpy value first, e.g. ``lambda x: x[:4]``.
        scale (float): multiplies the values, e.g. 255 for images in [0, 1].
        every_step (bool): dump along with every step instead of the last step of each epoch.

    Example:
        >>> DumpTensorAsImage("reconstruction", map_func=lambda x: x[:8], scale=255)
    """

    def __init__(self, name, prefix=None, map_func=None, scale=255, every_step=False):
        super().__init__(every_step)
        if not isinstance(name, str) or not name:
            raise ValueError(f"DumpTensorAsImage needs a tensor name, got {name!r}.")
        check_callable(map_func, "DumpTensorAsImage map_func", allow_none=True)
        check_number(scale, "DumpTensorAsImage scale")
        self.name = name
        self.prefix = prefix or get_op_tensor_name(name)[0].replace("/", "_")
        if os.sep in self.prefix:
            raise ValueError(f"DumpTensorAsImage prefix must be a file name, got {prefix!r}.")
        self.map_func = map_func
        self.scale = scale

    def _setup_graph(self):
        self.log_dir = _require_log_dir(self)
        self._fetches = self.get_tensors_maybe_in_tower([self.name])[0]

    def _to_images(self, value):
        if self.map_func is not None:
            value = self.map_func(value)
        batch = isinstance(value, (list, tuple)) or np.ndim(value) == 4
        images = [np.asarray(im) for im in value] if batch else [np.asarray(value)]
        result = []
        for im in images:
            if im.ndim == 2:
                im = im[:, :, np.newaxis]
            if im.ndim != 3 or im.shape[2] not in _PNG_COLOR_TYPES:
                raise ValueError(
                    f"{self}: {self.name} must give HW or HWC images with 1, 3 or 4 channels, or a "
                    "batch of them (NHWC or a list); got "
                    f"{'a batch with an image' if batch else 'an image'} of shape "
                    f"{im.shape if batch else np.shape(value)}. Use map_func to reshape it.")
            result.append(np.clip(im.astype(np.float64) * self.scale, 0, 255).astype(np.uint8))
        return result, batch

    def _dump(self, value):
        images, batch = self._to_images(value)
        for i, im in enumerate(images):
            suffix = f"-{i}" if batch else ""
            path = os.path.join(self.log_dir, f"{self.prefix}-{self.global_step}{suffix}.png")
            atomic_write(path, encode_png(im))
        if len({im.shape for im in images}) == 1:
            self.trainer.monitors.put_image(self.prefix, np.stack(images))
        else:
            for im in images:
                self.trainer.monitors.put_image(self.prefix, im)

    def __str__(self):
        return f"DumpTensorAsImage({self.name!r})"


DumpTensor = DumpTensors  # tensorpack's other name
DumpParamAsImage = DumpTensorAsImage  # tensorpack's other name
