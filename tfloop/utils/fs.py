"""Writing files so that a crash never leaves a partial one, reading them back, and tensorpack's
file helpers (``mkdir_p``, ``recursive_walk``, ``download``, ``get_dataset_path``)."""
import json
import os
import re
import shutil
import urllib.request
import uuid

from tfloop.utils import files

__all__ = ["atomic_write", "read_json_records", "load_json_records", "mkdir_p", "recursive_walk",
           "download", "get_dataset_path", "display_path", "normpath"]

_SPACE = re.compile(r"[ \t\n\r]*")


def atomic_write(path, data):
    """Replace ``path`` with new content through a temporary file, ``fsync`` and ``os.replace``.

    Readers (and a run resumed after ``kill -9``) see the old file or the complete new one, never a
    truncated file; the temporary file is removed when writing fails. A URL (``gs://``,
    ``ram://``; see :mod:`tfloop.utils.files`) is written the same way through TensorFlow's file
    layer: a temporary object, then a rename, which is atomic where that filesystem's rename (or
    object upload) is; TensorFlow's errors are raised as OSError.

    Args:
        path (str): the file to write.
        data (bytes, str or callable): the content; a callable receives the open text file and
            writes to it.

    Example:
        >>> atomic_write("stats.json", lambda f: json.dump(records, f))
        >>> atomic_write("image.png", png_bytes)
    """
    path = os.fspath(path)
    if files.is_url(path):
        _atomic_write_url(path, data)
        return
    path = os.path.abspath(path)
    tmp_path = _temporary_name(path)
    binary = isinstance(data, (bytes, bytearray, memoryview))
    try:
        # Mode "x" creates the file with the usual permissions (umask), unlike tempfile's 0600.
        with open(tmp_path, "xb" if binary else "x",
                  **({} if binary else {"encoding": "utf-8", "newline": ""})) as f:
            _write(f, data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise


def _temporary_name(path):
    return files.join(files.dirname(path),
                      f".{files.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")


def _write(f, data):
    if callable(data):
        data(f)
    else:
        f.write(data)


def _atomic_write_url(path, data):
    from tfloop.compat import tf
    tmp_path = _temporary_name(path)
    binary = isinstance(data, (bytes, bytearray, memoryview))
    try:
        with files.open_file(tmp_path, "wb" if binary else "w") as f:
            _write(f, bytes(data) if binary else data)
        files.rename(tmp_path, path)
    except tf.errors.OpError as e:
        _remove_quietly(tmp_path)
        raise OSError(f"cannot write {path}: {type(e).__name__}: "
                      f"{files.describe_error(e)}") from None
    except BaseException:
        _remove_quietly(tmp_path)
        raise


def _remove_quietly(path):
    try:
        if files.exists(path):
            files.remove(path)
    except OSError:
        pass


def read_json_records(path):
    """The records of a ``stats.json`` file (a local path or a URL): a list of dicts. A file that
    ends in an incomplete record (cut short by a crash) gives the complete records before it.

    Raises:
        ValueError: the file is not valid JSON or not a list of objects; the message names it.
    """
    return load_json_records(path)[0]


def load_json_records(path):
    """``(records, torn)`` of a ``stats.json`` file: :func:`read_json_records`'s records, and
    whether an incomplete last record was left out."""
    try:
        text = files.read_text(path)
    except UnicodeDecodeError as e:
        raise ValueError(f"{path} is not UTF-8 text: {e}") from None
    torn = False
    try:
        records = json.loads(text)
    except json.JSONDecodeError as e:
        records = _records_before_torn_tail(text)
        if records is None:
            raise ValueError(f"{path} is not valid JSON: {e}") from None
        torn = True
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"{path} is not a JSON list of records (objects)")
    return records, torn


def _records_before_torn_tail(text):
    """The records of a JSON list whose last record, on a line of its own, was cut short (then
    blank lines, maybe the closing ``]``), or None when ``text`` is broken in any other way."""
    decoder = json.JSONDecoder()
    position = _SPACE.match(text).end()
    if not text.startswith("[", position):
        return None
    records, position = [], position + 1
    while True:
        position = _SPACE.match(text, position).end()
        if records and text.startswith(",", position):
            position = _SPACE.match(text, position + 1).end()
        try:
            record, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            line = text[text.rfind("\n", 0, position) + 1:position]
            rest = text[position:].rstrip()
            rest = rest[:-1].rstrip() if rest.endswith("]") else rest
            on_its_line = line.strip(" ,") == "" and "\n" in text[:position]
            return records if on_its_line and rest.startswith("{") and "\n" not in rest else None
        records.append(record)


def mkdir_p(dirname):
    """Create ``dirname`` and its parents; no error when it exists (``mkdir -p``)."""
    if dirname:
        os.makedirs(dirname, exist_ok=True)


def recursive_walk(rootdir):
    """Yield the path of every file under ``rootdir``, recursively.

    Example:
        >>> wavs = [p for p in recursive_walk("TIMIT/TRAIN") if p.endswith(".wav")]
    """
    for root, _, names in os.walk(rootdir):
        for name in names:
            yield os.path.join(root, name)


def download(url, dir, filename=None, expect_size=None):
    """Fetch ``url`` into ``dir/filename`` (the URL's last part by default); an existing file of
    the expected size is kept. Written through a temporary file, so an interrupted download
    leaves no partial file.

    Args:
        url (str): what to fetch (``http(s)://``, ``ftp://`` or ``file://``).
        dir (str): the directory, created if needed.
        filename (str): the file name.
        expect_size (int): the size in bytes the file must have.

    Returns:
        str: the file's path.

    Raises:
        OSError: the size differs from ``expect_size``.

    Example:
        >>> path = download("https://example.com/ptb.train.txt", "data/ptb")
    """
    mkdir_p(dir)
    path = os.path.join(dir, filename or url.split("/")[-1])
    if os.path.isfile(path) and (expect_size is None or os.path.getsize(path) == expect_size):
        return path
    with urllib.request.urlopen(url) as response:
        atomic_write(path, lambda f: shutil.copyfileobj(response, f.buffer))
    size = os.path.getsize(path)
    if expect_size is not None and size != expect_size:
        os.remove(path)
        raise OSError(f"download: {url} gave {size} bytes, expected {expect_size}; "
                      f"the file was removed, try again.")
    return path


def get_dataset_path(*args):
    """A path under the datasets directory: ``$TFLOOP_DATASET`` (or ``$TENSORPACK_DATASET``),
    else ``~/tfloop_data``.

    Example:
        >>> get_dataset_path("svhn_data", "train_32x32.mat")
    """
    root = (os.environ.get("TFLOOP_DATASET") or os.environ.get("TENSORPACK_DATASET")
            or os.path.join("~", "tfloop_data"))
    return os.path.abspath(os.path.join(os.path.expanduser(root), *args))


def display_path(path):
    """``path`` as a log line shows it: relative to the working directory when it lies under
    it, absolute otherwise (a URL and ``None`` as they are).

    Example:
        >>> display_path(os.path.join(os.getcwd(), "train_log", "run1"))
        'train_log/run1'
    """
    if path is None:
        return None
    if files.is_url(path):
        return os.fspath(path)
    path = os.path.abspath(os.fspath(path))
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative == ".." or relative.startswith(".." + os.sep) else relative


def normpath(path):
    """``os.path.normpath(path)``, except for a URL (``gs://bucket//dir/``), which is kept as
    given: normalizing would merge its ``//``.

    Example:
        >>> normpath("a//b/../c"), normpath("gs://bucket/a/")
        ('a/c', 'gs://bucket/a/')
    """
    return path if "://" in path else os.path.normpath(path)
