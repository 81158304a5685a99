"""Writing files so that a crash never leaves a partial one, and reading them back."""
import json
import os
import uuid

__all__ = ["atomic_write", "read_json_records", "display_path"]


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
    tmp_path = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
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


def read_json_records(path):
    """The records of a ``stats.json`` file: a list of dicts.

    Raises:
        ValueError: the file is not valid JSON or not a list of objects; the message names it.
    """
    try:
        with open(path, encoding="utf-8") as f:
            records = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{path} is not a JSON list of records (objects)")
    return records


def display_path(path):
    """``path`` as a log line shows it: relative to the working directory when it lies under
    it, absolute otherwise (and ``None`` as is).

    Example:
        >>> display_path(os.path.join(os.getcwd(), "train_log", "run1"))
        'train_log/run1'
    """
    if path is None:
        return None
    path = os.path.abspath(os.fspath(path))
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative == ".." or relative.startswith(".." + os.sep) else relative
