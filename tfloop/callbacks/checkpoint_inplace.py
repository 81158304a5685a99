"""Checkpoints whose data files are reused: each new checkpoint overwrites, in place, the data file
of one that ``max_to_keep`` deleted.

TensorFlow's Saver deletes an old checkpoint's files after each save, and its writer creates a new
data file for the next: the operating system frees the old file's pages and allocates as many new
ones, which costs more than the copy of the data itself (on a 2-core VM, writing 1 GB into a new
file took 1.5-3.3 s, overwriting an existing one 0.5 s). Here each data file is also linked from a
hidden directory of slots beside the checkpoints (``.model-slots/slot-<k>``, hard links: no space
of their own); when the Saver deletes a checkpoint, its slot keeps the file, and the next
checkpoint is written into it and linked under its own name. At most ``max_to_keep + 1`` slots are
kept; a checkpoint kept for longer (``keep_checkpoint_every_n_hours``) gives up its slot. A write
never touches a listed checkpoint: a crash during one leaves a partial slot, no checkpoint file;
the slots of an earlier run are deleted at the first write, all of them at :meth:`release`.
"""
import errno
import os
import re
import shutil

from tfloop.callbacks.checkpoint_bundle import DATA_SUFFIX, INDEX_SUFFIX, write_data, write_index

__all__ = ["InPlaceWriter", "slot_directory"]

_STEP = re.compile(r"-\d+$")
# Hard links refused by the file system: write a new data file at every save instead.
_NO_LINKS = (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK)


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


class InPlaceWriter:
    """Write checkpoint bundles (``prefix.data-00000-of-00001``, ``prefix.index``) from numpy
    arrays, reusing the data files of deleted checkpoints.

    Args:
        max_to_keep (int): the Saver's ``max_to_keep``; 0 or None (every checkpoint kept): no slot
            is ever freed, so every data file is new.

    Example:
        >>> writer = InPlaceWriter(max_to_keep=5)
        >>> writer.write(["w", "b"], "train_log/model-100", w_value, b_value)
        >>> writer.release()           # when no more writes come
    """

    def __init__(self, max_to_keep):
        self._limit = max_to_keep + 1 if max_to_keep else 0
        self._slots = []        # least recently written first
        self._directory = None
        self._created = 0

    def write(self, names, prefix, *arrays):
        """Write the tensors ``arrays`` named ``names`` as checkpoint ``prefix``."""
        prefix = prefix.decode() if isinstance(prefix, bytes) else prefix
        order = sorted(range(len(names)), key=lambda i: names[i].encode())
        sizes = sum(arrays[i].nbytes for i in order)
        slot = self._acquire(prefix)
        try:
            fd = os.open(slot, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                _reserve(fd, sizes)
                placed = write_data(fd, [arrays[i] for i in order])
            finally:
                os.close(fd)
            self._publish(slot, prefix + DATA_SUFFIX)
            index = {names[i]: (arrays[i].dtype, arrays[i].shape, p) for i, p in zip(order, placed)}
            temporary = prefix + INDEX_SUFFIX + ".tempstate"
            write_index(temporary, index)
            os.replace(temporary, prefix + INDEX_SUFFIX)
        except BaseException:
            self._forget(slot)
            for path in (prefix + INDEX_SUFFIX + ".tempstate", slot + ".link"):
                if os.path.lexists(path):
                    os.unlink(path)
            raise
        return sizes

    def _acquire(self, prefix):
        """A slot to write into: the least recently written free one, or a new one."""
        directory = slot_directory(prefix)
        if directory != self._directory:
            shutil.rmtree(directory, ignore_errors=True)     # an earlier run's, or none
            os.makedirs(directory)
            self._directory, self._slots = directory, []
        for slot in self._slots:
            if os.stat(slot).st_nlink == 1:     # its checkpoint was deleted
                self._slots.remove(slot)
                self._slots.append(slot)
                return slot
        while self._slots and len(self._slots) >= self._limit:
            os.unlink(self._slots.pop(0))       # a kept checkpoint keeps its data
        slot = os.path.join(directory, f"slot-{self._created}")
        self._created += 1
        self._slots.append(slot)
        return slot

    def _publish(self, slot, path):
        """Put the slot's complete file at ``path`` too (replacing a file of that name)."""
        if self._limit:
            try:
                os.link(slot, slot + ".link")
            except OSError as e:
                if e.errno not in _NO_LINKS:
                    raise
                self._limit = 0
            else:
                os.replace(slot + ".link", path)
                return
        self._slots.remove(slot)
        os.replace(slot, path)

    def _forget(self, slot):
        if slot in self._slots:
            self._slots.remove(slot)
        if os.path.lexists(slot):
            os.unlink(slot)

    def release(self):
        """Delete the slots (the checkpoints keep their files); the next write starts anew."""
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
        self._directory, self._slots = None, []
