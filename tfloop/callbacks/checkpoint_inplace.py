"""Checkpoints whose data files are reused: each new checkpoint overwrites, in place, the data file
of one that ``max_to_keep`` deleted.

TensorFlow's Saver deletes an old checkpoint's files after each save, and its writer creates a new
data file for the next: the operating system frees the old file's pages and allocates as many new
ones, which costs more than the copy of the data itself (on a 2-core VM, writing 1 GB into a new
file took 0.9 s, overwriting an existing one 0.3 s). Here, just before a checkpoint is deleted,
its data file is linked into a hidden directory beside the checkpoints (``.model-slots``); the
deletion then leaves the file there, a spare, and the next checkpoint is written into it and
renamed to its own name. The directory holds nothing else than spares and the file being written
(no link to a checkpoint that is kept, so that copying the directory copies no data twice); at
most two spares are kept. A write never touches a listed checkpoint: a crash during one leaves a
partial file in the slots, no checkpoint file; the slots of an earlier run are deleted at the first
write, all of them at :meth:`InPlaceWriter.release`.
"""
import errno
import os
import re
import shutil
import threading

from tfloop.callbacks.checkpoint_bundle import DATA_SUFFIX, INDEX_SUFFIX, write_data, write_index

__all__ = ["InPlaceWriter", "slot_directory"]

_STEP = re.compile(r"-\d+$")
# Hard links refused by the file system: write a new data file at every save instead.
_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK)
# Spare data files kept at most: one per checkpoint a save deletes, and a save deletes one (a
# directory several savers share: seldom more).
_MAX_SPARES = 2


def slot_directory(prefix):
    """The slot directory of checkpoint ``prefix`` (``.../model-12`` -> ``.../.model-slots``)."""
    stem = _STEP.sub("", os.path.basename(prefix))
    return os.path.join(os.path.dirname(prefix), f".{stem}-slots")


def _reserve(fd, size):
    """Allocate the file's blocks up front: a full disk fails here, before any byte is written."""
    try:
        os.posix_fallocate(fd, 0, max(size, 1))
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.ENOTSUP, errno.EINVAL):
            raise


def _remove(path):
    if os.path.lexists(path):
        os.unlink(path)


class InPlaceWriter:
    """Write checkpoint bundles (``prefix.data-00000-of-00001``, ``prefix.index``) from numpy
    arrays, into the data files of deleted checkpoints when there are some.

    Whoever deletes checkpoints calls :meth:`keep_data_of` just before deleting one and
    :meth:`settle` after (TensorFlow's Saver as the snapshot's Saver drives it, or a
    :class:`~tfloop.callbacks.checkpoint_dir.SharedCheckpointDir`).

    Args:
        max_to_keep (int): the Saver's ``max_to_keep``; 0 or None (every checkpoint kept): no
            checkpoint is ever deleted, so every data file is new.

    Example:
        >>> writer = InPlaceWriter(max_to_keep=5)
        >>> writer.write(["w", "b"], "train_log/model-100", w_value, b_value)
        >>> writer.keep_data_of("train_log/model-95")   # about to be deleted
        >>> writer.settle()                             # once it was
        >>> writer.release()           # when no more writes come
    """

    def __init__(self, max_to_keep):
        self._reuse = bool(max_to_keep)
        self._lock = threading.Lock()
        self._spares = []
        self._directory = None
        self._created = 0

    def write(self, names, prefix, *arrays):
        """Write the tensors ``arrays`` named ``names`` as checkpoint ``prefix``."""
        prefix = prefix.decode() if isinstance(prefix, bytes) else prefix
        order = sorted(range(len(names)), key=lambda i: names[i].encode())
        sizes = sum(arrays[i].nbytes for i in order)
        slot = self._take_slot(prefix)
        data, index = prefix + DATA_SUFFIX, prefix + INDEX_SUFFIX
        written = [slot]        # what a failure deletes: no checkpoint rather than a broken one
        try:
            fd = os.open(slot, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _reserve(fd, sizes)
                placed = write_data(fd, [arrays[i] for i in order])
            finally:
                os.close(fd)
            os.replace(slot, data)
            written += [data, index, index + ".tempstate"]
            write_index(index + ".tempstate", {names[i]: (arrays[i].dtype, arrays[i].shape, p)
                                               for i, p in zip(order, placed)})
            os.replace(index + ".tempstate", index)
        except BaseException:
            for path in written:
                _remove(path)
            raise
        return sizes

    def _take_slot(self, prefix):
        """The file to write into: the oldest spare, or a new one."""
        with self._lock:
            directory = slot_directory(prefix)
            if directory != self._directory:
                shutil.rmtree(directory, ignore_errors=True)     # an earlier run's, or none
                self._directory, self._spares = directory, []
            os.makedirs(directory, exist_ok=True)    # also when deleted under the writer
            if self._spares:
                return self._spares.pop(0)
            self._created += 1
            return os.path.join(directory, f"slot-{self._created}")

    def keep_data_of(self, prefix):
        """Link the data file of checkpoint ``prefix``, about to be deleted, into the slots: the
        deletion leaves it there for the next write."""
        data = prefix + DATA_SUFFIX
        with self._lock:
            if (not self._reuse or self._directory is None or len(self._spares) >= _MAX_SPARES
                    or not os.path.isfile(data)):
                return
            self._created += 1
            spare = os.path.join(self._directory, f"slot-{self._created}")
            try:
                os.link(data, spare)
            except OSError as e:
                if e.errno not in _NO_LINKS:
                    raise
                self._reuse = False
                return
            self._spares.append(spare)

    def settle(self):
        """After a deletion: give up the spares whose checkpoint was kept after all (a deleter
        may keep one, as TensorFlow's Saver does every ``keep_checkpoint_every_n_hours``)."""
        with self._lock:
            for spare in list(self._spares):
                try:
                    kept = os.stat(spare).st_nlink > 1
                except FileNotFoundError:       # the slots were deleted under the writer
                    self._spares.remove(spare)
                    continue
                if kept:
                    self._spares.remove(spare)
                    os.unlink(spare)

    def release(self):
        """Delete the slots (the checkpoints keep their files); the next write starts anew."""
        with self._lock:
            if self._directory is not None:
                shutil.rmtree(self._directory, ignore_errors=True)
            self._directory, self._spares = None, []
