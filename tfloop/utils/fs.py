"""Writing files so that a crash never leaves a partial one."""
import os
import uuid

__all__ = ["atomic_write"]


def atomic_write(path, data):
    """Replace ``path`` with new content through a temporary file, ``fsync`` and ``os.replace``.

    Readers (and a run resumed after ``kill -9``) see the old file or the complete new one, never a
    truncated file; the temporary file is removed when writing fails.

    Args:
        path (str): the file to write.
        data (bytes, str or callable): the content; a callable receives the open text file and
            writes to it.

    Example:
        >>> atomic_write("stats.json", lambda f: json.dump(records, f))
        >>> atomic_write("image.png", png_bytes)
    """
    path = os.path.abspath(os.fspath(path))
    tmp_path = os.path.join(os.path.dirname(path), ".{}.{}.tmp".format(os.path.basename(path),
                                                                       uuid.uuid4().hex[:12]))
    binary = isinstance(data, (bytes, bytearray, memoryview))
    try:
        # Mode "x" creates the file with the usual permissions (umask), unlike tempfile's 0600.
        with open(tmp_path, "xb" if binary else "x", **({} if binary else
                                                          {"encoding": "utf-8", "newline": ""})) as f:
            if callable(data):
                data(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise
