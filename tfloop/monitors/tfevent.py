"""TFEventWriter: everything put to the monitors, in TensorBoard event files."""
import os
import socket
import struct
import time
import zlib

import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.monitors.base import summary_scalar
from tfloop.monitors.logdir import LogDirMonitor
from tfloop.utils import files, logger
from tfloop.utils.checks import check_positive_int, check_positive_number

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
        raise ValueError("encode_png needs an HWC uint8 array with 1, 3 or 4 channels, got "
                         f"{image.dtype} of shape {image.shape}.")
    height, width, channels = image.shape
    rows = image.reshape(height, width * channels)
    # Each PNG scanline starts with its filter type; 0 means unfiltered.
    scanlines = np.concatenate([np.zeros((height, 1), np.uint8), rows], axis=1)
    header = struct.pack(">IIBBBBB", width, height, 8, _PNG_COLOR_TYPES[channels], 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) +
            _png_chunk(b"IDAT", zlib.compress(scanlines.tobytes())) + _png_chunk(b"IEND", b""))


class _EventFile:
    """One TensorBoard event file, written synchronously: a failed write raises here, in the
    training thread (TF's own FileWriter fails in a thread of its own, printing a traceback, and
    raises later at an unrelated call)."""

    def __init__(self, logdir, suffix):
        name = f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}{suffix or ''}"
        self.path = files.join(logdir, name)
        index = 1
        while files.exists(self.path):  # another file of this second: never overwrite it
            self.path = files.join(logdir, f"{name}.{index}")
            index += 1
        self._writer = tf.io.TFRecordWriter(self.path)
        self._pending = [tfv1.Event(wall_time=time.time(), file_version="brain.Event:2")]
        self._flushed_at = time.monotonic()

    def add(self, event, max_queue, flush_secs):
        """Queue ``event``; returns whether the queue was written to disk."""
        self._pending.append(event)
        if len(self._pending) >= max_queue or time.monotonic() - self._flushed_at >= flush_secs:
            return self.flush()
        return False

    def flush(self):
        pending, self._pending = self._pending, []
        self._flushed_at = time.monotonic()
        for event in pending:
            self._writer.write(event.SerializeToString())
        self._writer.flush()
        return True

    def close(self):
        try:
            self.flush()
        finally:
            self._writer.close()


class TFEventWriter(LogDirMonitor):
    """Write scalars, images, summaries and events to TensorBoard event files.

    Scalars become ``simple_value`` summaries and images PNG image summaries (tag ``name``, or
    ``name/0``, ``name/1``... for several), all at the current ``global_step``; other summaries
    (histograms ...) are written as they are. Events are queued and written (TFRecord files of
    ``tf.compat.v1.Event``, as ``tf.compat.v1.summary.FileWriter`` writes them) when ``max_queue``
    are waiting or ``flush_secs`` have passed, at least after every epoch, and when training ends.
    One of the default monitors; skipped when there is no log directory.

    A write that fails (a full disk, the directory gone) does not stop training: it is logged once,
    with the file and the error, events are dropped until the next epoch ends, and then a new event
    file is tried (logged when it works again).

    Args:
        logdir (str): the directory of the event files; the log directory by default.
        max_queue (int): events queued before a write to disk.
        flush_secs (float): flush at least this often.
        split_files (bool): close the event file after every epoch and write the next epoch's
            events to a new one, for file systems where appending is expensive.
        write_graph (bool): write the training graph when training starts (TensorBoard's Graphs
            tab).

    Example:
        >>> TrainConfig(..., monitors=[TFEventWriter(flush_secs=30), ScalarPrinter()])
        >>> # then: tensorboard --logdir train_log/run1
    """

    def __init__(self, logdir=None, max_queue=10, flush_secs=120, split_files=False,
                 write_graph=True):
        super().__init__(logdir)
        self._write_graph = bool(write_graph)
        self._max_queue = check_positive_int(max_queue, "TFEventWriter: max_queue")
        self._flush_secs = check_positive_number(flush_secs, "TFEventWriter: flush_secs")
        self._split_files = bool(split_files)
        self._file = None
        self._files_opened = 0
        self._failing = False   # a failure was logged and no write has worked since
        self._paused = False    # events are dropped until the next epoch ends

    def _get_file(self):
        # Opened on first use, which may be another callback's before_train, ahead of ours.
        if self._file is None and self.logdir is not None and not self._paused:
            # Files are named by the second; split files need a suffix not to overwrite one another.
            suffix = f".{os.getpid()}.{self._files_opened:05d}" if self._split_files \
                else None
            self._files_opened += 1
            self._guard(lambda: setattr(self, "_file", _EventFile(self.logdir, suffix)))
        return self._file

    def _guard(self, write):
        """Run ``write``; a failure is logged once per burst of failures and drops events until
        the next epoch ends. Returns whether it worked."""
        try:
            wrote = write()
        except (OSError, tf.errors.OpError) as e:
            broken, self._file = self._file, None
            if broken is not None:
                try:
                    broken._writer.close()
                except (OSError, tf.errors.OpError):
                    pass
            if not self._failing:
                message = e.message if isinstance(e, tf.errors.OpError) else str(e)
                logger.error("TFEventWriter could not write TensorBoard events to "
                             f"{getattr(broken, 'path', self.logdir)} at global step "
                             f"{self.global_step}: {type(e).__name__}: "
                             f"{message.splitlines()[0] if message else ''}. Events are dropped "
                             "until the next epoch ends, then a new event file is tried; training "
                             f"continues. Check the free space of {self.logdir}.")
            self._failing = self._paused = True
            return False
        if wrote and self._failing:
            self._failing = False
            where = self._file.path if self._file is not None else self.logdir
            logger.info(f"TFEventWriter: writing events again, to {where}.")
        return True

    def _add(self, event):
        event_file = self._get_file()
        if event_file is not None:
            self._guard(lambda: event_file.add(event, self._max_queue, self._flush_secs))

    def _add_summary(self, values):
        self._add(tfv1.Event(wall_time=time.time(), step=self.global_step,
                             summary=tfv1.Summary(value=values)))

    def _before_train(self):
        self._failing = self._paused = False
        if self.logdir is not None and self._write_graph:
            self._add(tfv1.Event(wall_time=time.time(), step=self.global_step,
                                 graph_def=self.graph.as_graph_def().SerializeToString()))
        if self.logdir is not None and self.global_step > 0:
            # A resumed run: TensorBoard drops what a killed run wrote after this step.
            self._add(tfv1.Event(wall_time=time.time(), step=self.global_step,
                                 session_log=tfv1.SessionLog(status=tfv1.SessionLog.START)))

    def process_scalar(self, name, value):
        self._add_summary([tfv1.Summary.Value(tag=name, simple_value=value)])

    def process_image(self, name, images):
        values = []
        for i, image in enumerate(images):
            tag = name if len(images) == 1 else f"{name}/{i}"
            encoded = tfv1.Summary.Image(height=image.shape[0], width=image.shape[1],
                                         colorspace=image.shape[2],
                                         encoded_image_string=encode_png(image))
            values.append(tfv1.Summary.Value(tag=tag, image=encoded))
        self._add_summary(values)

    def process_summary(self, summary):
        # Scalar values arrive through process_scalar too (with tower prefixes stripped).
        values = [v for v in summary.value if summary_scalar(v) is None]
        if values:
            self._add_summary(values)

    def process_event(self, event):
        self._add(event)

    def _trigger(self):
        self._paused = False
        if self._file is None:
            return
        if self._split_files:
            event_file, self._file = self._file, None  # the next write opens a new file
            self._guard(lambda: event_file.close() or True)
        else:
            self._guard(self._file.flush)

    def _after_train(self):
        if self._file is not None:
            event_file, self._file = self._file, None
            self._guard(event_file.close)
