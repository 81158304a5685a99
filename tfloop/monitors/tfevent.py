"""TFEventWriter: everything put to the monitors, in TensorBoard event files."""
import os
import struct
import zlib

import numpy as np

from tfloop.compat import tfv1
from tfloop.monitors.logdir import LogDirMonitor

__all__ = ["TFEventWriter", "encode_png"]

_PNG_COLOR_TYPES = {1: 0, 3: 2, 4: 6}  # channels -> PNG color type (gray, RGB, RGBA)


def _png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(image):
    """Encode an HWC uint8 array (C = 1, 3 or 4) as PNG bytes.

    Example:
        >>> png = encode_png(np.zeros((8, 8, 3), np.uint8))
    """
    image = np.asarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] not in _PNG_COLOR_TYPES:
        raise ValueError("encode_png needs an HWC uint8 array with 1, 3 or 4 channels, got {} of "
                         "shape {}.".format(image.dtype, image.shape))
    height, width, channels = image.shape
    rows = image.reshape(height, width * channels)
    # Each PNG scanline starts with its filter type; 0 means unfiltered.
    scanlines = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPES[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) +
            _png_chunk(b"IDAT", zlib.compress(scanlines.tobytes())) + _png_chunk(b"IEND", b""))


class TFEventWriter(LogDirMonitor):
    """Write scalars, images, summaries and events to TensorBoard event files.

    Uses TensorFlow's own ``tf.compat.v1.summary.FileWriter``. Scalars become ``simple_value``
    summaries and images PNG image summaries (tag ``name``, or ``name/0``, ``name/1``... for
    several), all at the current ``global_step``; other summaries (histograms ...) are written as
    they are. The file is flushed at least after every epoch and closed when training ends.
    One of the default monitors; skipped when there is no log directory.

    Args:
        logdir (str): the directory of the event files; the log directory by default.
        max_queue (int): events queued before a write to disk.
        flush_secs (float): flush at least this often.
        split_files (bool): close the event file after every epoch and write the next epoch's
            events to a new one, for file systems where appending is expensive.
        write_graph (bool): write the training graph once when training starts (TensorBoard's
            Graphs tab).

    Example:
        >>> TrainConfig(..., monitors=[TFEventWriter(flush_secs=30), ScalarPrinter()])
        >>> # then: tensorboard --logdir train_log/run1
    """

    def __init__(self, logdir=None, max_queue=10, flush_secs=120, split_files=False,
                 write_graph=True):
        super().__init__(logdir)
        self._write_graph = bool(write_graph)
        if isinstance(max_queue, bool) or not isinstance(max_queue, int) or max_queue <= 0:
            raise ValueError("TFEventWriter: max_queue must be a positive int, got {!r}.".format(
                max_queue))
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or \
                flush_secs <= 0:
            raise ValueError("TFEventWriter: flush_secs must be a positive number, got {!r}."
                             .format(flush_secs))
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._split_files = bool(split_files)
        self._writer = None
        self._files_opened = 0

    def _get_writer(self):
        # Opened on first use, which may be another callback's before_train, ahead of ours.
        if self._writer is None and self.logdir is not None:
            # TF names event files by the second; split files need a suffix not to overwrite
            # one another.
            suffix = ".{}.{:05d}".format(os.getpid(), self._files_opened) if self._split_files \
                else None
            self._files_opened += 1
            with self.graph.as_default():  # FileWriter refuses to be created in eager mode
                self._writer = tfv1.summary.FileWriter(self.logdir, max_queue=self._max_queue,
                                                       flush_secs=self._flush_secs,
                                                       filename_suffix=suffix)
        return self._writer

    def _add_summary(self, values):
        writer = self._get_writer()
        if writer is not None:
            writer.add_summary(tfv1.Summary(value=values), self.global_step)

    def _before_train(self):
        writer = self._get_writer()
        if writer is not None and self._write_graph:
            writer.add_graph(self.graph)
        if writer is not None and self.global_step > 0:
            # A resumed run: TensorBoard drops what a killed run wrote after this step.
            writer.add_session_log(tfv1.SessionLog(status=tfv1.SessionLog.START), self.global_step)

    def process_scalar(self, name, value):
        self._add_summary([tfv1.Summary.Value(tag=name, simple_value=value)])

    def process_image(self, name, images):
        values = []
        for i, image in enumerate(images):
            tag = name if len(images) == 1 else "{}/{}".format(name, i)
            encoded = tfv1.Summary.Image(height=image.shape[0], width=image.shape[1],
                                         colorspace=image.shape[2],
                                         encoded_image_string=encode_png(image))
            values.append(tfv1.Summary.Value(tag=tag, image=encoded))
        self._add_summary(values)

    def process_summary(self, summary):
        # Scalar values arrive through process_scalar too (with tower prefixes stripped).
        values = [v for v in summary.value if v.WhichOneof("value") != "simple_value"]
        if values:
            self._add_summary(values)

    def process_event(self, event):
        writer = self._get_writer()
        if writer is not None:
            writer.add_event(event)

    def _trigger(self):
        if self._writer is None:
            return
        if self._split_files:
            self._writer.close()
            self._writer = None  # the next write opens a new file
        else:
            self._writer.flush()

    def _after_train(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
