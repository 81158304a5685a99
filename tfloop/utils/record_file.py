"""A local file of records that grows in place: each record costs one small write, and a process
killed at any moment leaves a complete file.

The file is ``body + reserve + tail``: the body holds the records written so far, the reserve is
blank lines (JSON's whitespace, empty CSV lines, which readers skip) and the tail closes the file
(``]`` for a JSON list, nothing for CSV). A record is written over the start of the reserve with
one ``pwrite`` that never crosses a page boundary of the file. Linux copies a write into the page
cache page by page and stops between pages when the process is killed (``generic_perform_write``
checks for a fatal signal there: a 512 MB ``write`` killed after 50 ms leaves 38 MB), so a write
within one page lands whole or not at all, and no write ever moves the tail. A record that would
cross a page starts at the next page instead (the gap stays blank). When the reserve runs out, or
a record is longer than a page, the file is rewritten atomically (temporary file, ``fsync``,
rename) with a reserve as large as the body: rewrites get rarer as the file grows, so the
cost per record stays constant. The file is compacted (reserve and gaps dropped) by
:meth:`RecordFile.finish`.

No ``fsync`` per record: a kill leaves what was written in the page cache, which the system writes
out; a power loss can lose the records of the last few seconds, never the file.

Example:
    >>> f = RecordFile("stats.json", tail=b"]\\n")
    >>> f.rewrite(b"[\\n")
    >>> f.append(b'{"epoch_num": 1}\\n')
    True
    >>> f.finish()
"""
import mmap
import os

from tfloop.utils.fs import atomic_write

__all__ = ["RecordFile", "PAGE"]

PAGE = mmap.PAGESIZE
MIN_RESERVE = 16 * PAGE   # 64 KiB: some 400 records of a few scalars before the first rewrite
PAD = b"\n"


class RecordFile:
    """A local file of records grown in place (see the module's docstring).

    Args:
        path (str): the file (local).
        tail (bytes): what follows the records (``b"]\\n"`` for a JSON list).
    """

    def __init__(self, path, tail=b""):
        self.path = path
        self.tail = bytes(tail)
        self._fd = None
        self._identity = None
        self._end = 0       # offset after the last record
        self._limit = 0     # offset where the reserve ends (and the tail starts)
        self._gaps = []     # (start, end) of the blank runs left before records moved to a new page

    def rewrite(self, body):
        """Replace the file atomically with ``body``, a reserve and the tail; later records are
        appended after ``body``.

        Raises:
            OSError: the file cannot be written.
        """
        self.close()
        reserve = max(MIN_RESERVE, len(body))
        atomic_write(self.path, bytes(body) + PAD * reserve + self.tail)
        fd = os.open(self.path, os.O_RDWR)
        stat = os.fstat(fd)
        self._fd, self._identity = fd, (stat.st_dev, stat.st_ino)
        self._end, self._limit, self._gaps = len(body), len(body) + reserve, []

    def append(self, text):
        """Write ``text`` (one record, ending in a newline) after the last record.

        Returns:
            bool: False when it must go through :meth:`rewrite` instead: the reserve is used up,
            ``text`` is longer than a page, or the file is not the one this object wrote (removed,
            replaced) or was never written.

        Raises:
            OSError: the write failed; the file still holds the records before ``text``.
        """
        if self._fd is not None and not self._is_ours():
            self.close()
        if self._fd is None or len(text) > PAGE:
            return False
        start = self._end
        if start // PAGE != (start + len(text) - 1) // PAGE:
            start = (start // PAGE + 1) * PAGE
        if start + len(text) > self._limit:
            return False
        try:
            written = os.pwrite(self._fd, text, start)
        except OSError:
            self.close()
            raise
        if written != len(text):
            self._blank(start, written)
            raise OSError(f"{self.path}: wrote {written} of {len(text)} bytes")
        if start != self._end:
            self._gaps.append((self._end, start))
        self._end = start + len(text)
        return True

    def body(self):
        """The records written so far, with the head, without the gaps between pages."""
        data = os.pread(self._fd, self._end, 0)
        if len(data) != self._end:
            raise OSError(f"{self.path} is shorter than the {self._end} bytes written to it")
        parts, position = [], 0
        for start, end in self._gaps:
            parts.append(data[position:start])
            position = end
        parts.append(data[position:])
        return b"".join(parts)

    @property
    def is_open(self):
        """Whether the file is open: :meth:`grow` can rewrite it from its own records."""
        return self._fd is not None

    def grow(self, text):
        """Rewrite the file with every record so far, ``text`` after them, and a larger reserve."""
        self.rewrite(self.body() + text)

    def finish(self):
        """Drop the reserve and the gaps: the file becomes ``body + tail``, then is closed. A file
        without a tail and gaps is truncated; any other is rewritten atomically."""
        if self._fd is None:
            return
        try:
            if not self._is_ours():
                return
            if not self.tail and not self._gaps:
                os.ftruncate(self._fd, self._end)
            else:
                atomic_write(self.path, self.body() + self.tail)
        finally:
            self.close()

    def close(self):
        """Close the file; the next record goes through :meth:`rewrite`."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def _is_ours(self):
        try:
            stat = os.stat(self.path)
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self._identity

    def _blank(self, start, count):
        """Blank out ``count`` bytes written at ``start`` by a write cut short (a full disk)."""
        try:
            os.pwrite(self._fd, PAD * count, start)
        except OSError:
            pass
        finally:
            self.close()
