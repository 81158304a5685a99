"""The file layer of a run: local paths through ``os``, URLs through TensorFlow's ``tf.io.gfile``.

Every file a run writes or a reader reads (checkpoints aside, which TensorFlow's ops write
themselves) goes through these functions, so a log directory can be any path TensorFlow's file
layer knows: a local path, ``gs://bucket/run``, ``ram://run`` (TensorFlow's in-memory filesystem),
``s3://``/``hdfs://`` when their plugin is installed. A path with a scheme (``<scheme>://``) is a
URL: it is never turned into a local folder (``./gs:/bucket``), and TensorFlow is imported for it
only then, so reading a local directory never loads TensorFlow.

Example:
    >>> path = join("gs://bucket/run", "stats.json")
    >>> with open_file(path, "w") as f:
    ...     f.write("[]")
"""
import errno
import glob
import os
import posixpath
import re
import shutil

__all__ = ["scheme_of", "is_url", "resolve", "join", "dirname", "basename", "exists", "isdir",
           "isfile", "listdir", "makedirs", "open_file", "read_bytes", "read_text", "remove",
           "rename", "move_tree", "copy", "size", "mtime", "rmtree", "describe_error",
           "UnknownSchemeError", "PLUGINS"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

# The package that teaches TensorFlow a scheme it does not know by itself.
PLUGINS = {"s3": "tensorflow-io", "hdfs": "tensorflow-io", "viewfs": "tensorflow-io",
           "har": "tensorflow-io", "az": "tensorflow-io", "http": "tensorflow-io",
           "https": "tensorflow-io"}


class UnknownSchemeError(ValueError):
    """A URL whose scheme TensorFlow's file layer does not know (no plugin loaded for it).

    Example:
        >>> resolve("s3://bucket/run")     # without tensorflow-io
        Traceback (most recent call last):
        UnknownSchemeError: ... scheme 's3' ... pip install tensorflow-io ...
    """


def scheme_of(path):
    """The scheme of a URL (``"gs"`` for ``gs://bucket/run``), or None for a local path."""
    match = _SCHEME.match(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else None
    return match.group(1).lower() if match else None


def is_url(path):
    """Whether ``path`` has a scheme, so that only TensorFlow's file layer can reach it."""
    return scheme_of(path) is not None


def _gfile(path):
    """``tf.io.gfile``, after checking that it knows the scheme of ``path``."""
    from tfloop.compat import tf
    scheme = scheme_of(path)
    if scheme not in tf.io.gfile.get_registered_schemes():
        plugin = PLUGINS.get(scheme)
        fix = (f"install {plugin} (pip install {plugin}) and import it before training" if plugin
               else "install the TensorFlow file system plugin for it")
        raise UnknownSchemeError(
            f"{path}: TensorFlow's file layer does not know the scheme {scheme!r} (it knows "
            f"{', '.join(s + '://' for s in sorted(tf.io.gfile.get_registered_schemes()) if s)}): "
            f"{fix}, or use a local path.")
    return tf.io.gfile


def describe_error(error):
    """The first line of an error's message (TensorFlow's ``message``, else ``str``), or its
    type's name when it has none."""
    text = getattr(error, "message", None) or getattr(error, "strerror", None) or str(error)
    lines = [line for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__


def _os_error(path, error):
    """TensorFlow's error for ``path`` as the OSError a local file operation raises."""
    from tfloop.compat import tf
    kind = FileNotFoundError if isinstance(error, tf.errors.NotFoundError) else \
        PermissionError if isinstance(error, tf.errors.PermissionDeniedError) else OSError
    code = errno.ENOENT if kind is FileNotFoundError else errno.EIO
    return kind(code, f"{type(error).__name__}: {describe_error(error)}", path)


def _call(path, operation, *args, **kwargs):
    """``tf.io.gfile.<operation>(path, ...)``, its errors raised as OSError."""
    from tfloop.compat import tf
    gfile = _gfile(path)
    try:
        return getattr(gfile, operation)(path, *args, **kwargs)
    except tf.errors.OpError as e:
        raise _os_error(path, e) from None


def resolve(path):
    """``path`` as a run uses it: a local path made absolute, a URL checked (its scheme must be
    known to TensorFlow) and kept as it is.

    Raises:
        UnknownSchemeError: the URL's scheme is not one TensorFlow's file layer knows.
    """
    path = os.fspath(path)
    if is_url(path):
        _gfile(path)
        return path
    return os.path.abspath(path)


def join(path, *parts):
    """``os.path.join`` for local paths; ``/``-joined for URLs."""
    path = os.fspath(path)
    return posixpath.join(path, *parts) if is_url(path) else os.path.join(path, *parts)


def dirname(path):
    """The directory of ``path`` (a URL keeps its scheme)."""
    return posixpath.dirname(path.rstrip("/")) if is_url(path) else os.path.dirname(path)


def basename(path):
    """The last part of ``path``."""
    return posixpath.basename(path.rstrip("/")) if is_url(path) else os.path.basename(path)


def exists(path):
    """Whether ``path`` exists (False where it cannot be read)."""
    if not is_url(path):
        return os.path.exists(path)
    try:
        return bool(_call(path, "exists"))
    except OSError:
        return False


def isdir(path):
    """Whether ``path`` is a directory. For a URL its parent must list it too: TensorFlow's
    ``ram://`` answers that any prefix of a name is a directory (``run/model-4`` for
    ``run/model-4.index``)."""
    if not is_url(path):
        return os.path.isdir(path)
    try:
        if not _call(path, "isdir"):
            return False
        parent = dirname(path)
        return not is_url(parent) or basename(path) in listdir(parent)
    except OSError:
        return False


def isfile(path):
    """Whether ``path`` is a file."""
    if not is_url(path):
        return os.path.isfile(path)
    return exists(path) and not isdir(path)


def listdir(path):
    """The names in directory ``path`` (OSError when it cannot be listed).

    TensorFlow's ``ram://`` lists in a directory the rest of every name that starts with the
    directory's name: the sibling directory ``run1_old`` shows as ``_old`` in ``run1``, the file
    ``run1.txt`` as ``.txt``. Nothing is there (they cannot be read, moved or removed), so the
    names of a ``ram://`` directory are those its pattern ``<dir>/*`` matches, which are exact."""
    if not is_url(path):
        return os.listdir(path)
    names = [name.rstrip("/") for name in _call(path, "listdir")]
    if scheme_of(path) == "ram":
        pattern = join(glob.escape(path.rstrip("/")), "*")
        real = {basename(match) for match in _call(pattern, "glob")}
        return [name for name in names if name in real]
    return names


def makedirs(path):
    """Create directory ``path`` and its parents; nothing when it exists."""
    if not is_url(path):
        os.makedirs(path, exist_ok=True)
    else:
        _call(path, "makedirs")


def open_file(path, mode="r", encoding="utf-8"):
    """Open ``path`` (modes ``r``, ``w``, ``a``, ``x``, with ``b`` for bytes): the built-in
    ``open`` for local paths, a ``GFile`` for URLs (text in UTF-8; ``x`` there: ``w`` after
    checking that nothing is at ``path``). TensorFlow's errors while reading or writing a
    ``GFile`` are ``tf.errors.OpError``."""
    if not is_url(path):
        if "b" in mode:
            return open(path, mode)
        return open(path, mode, encoding=encoding, newline="")
    from tfloop.compat import tf
    gfile = _gfile(path)
    raw_mode = mode.replace("b", "").replace("t", "")
    if raw_mode == "x":
        if exists(path):
            raise FileExistsError(errno.EEXIST, "File exists", path)
        raw_mode = "w"
    try:
        return gfile.GFile(path, raw_mode + ("b" if "b" in mode else ""))
    except tf.errors.OpError as e:
        raise _os_error(path, e) from None


def read_bytes(path):
    """The content of the file ``path``; TensorFlow's errors raised as OSError."""
    if not is_url(path):
        with open(path, "rb") as f:
            return f.read()
    from tfloop.compat import tf
    try:
        with open_file(path, "rb") as f:
            return f.read()
    except tf.errors.OpError as e:
        raise _os_error(path, e) from None


def read_text(path, errors="strict"):
    """The content of the UTF-8 file ``path`` as a str; TensorFlow's errors raised as OSError."""
    return read_bytes(path).decode("utf-8", errors=errors)


def remove(path):
    """Remove the file ``path``."""
    if not is_url(path):
        os.remove(path)
    else:
        _call(path, "remove")


def rename(source, target):
    """Move ``source`` to ``target``, replacing it: ``os.replace`` on a local disk (atomic);
    ``tf.io.gfile.rename`` for URLs, atomic only where the filesystem makes it so."""
    if not is_url(source):
        os.replace(source, target)
    else:
        _call(source, "rename", target, overwrite=True)


def move_tree(source, target):
    """Move the directory ``source`` to ``target`` (which must not exist): one rename on a local
    disk; for a URL, each file copied, then ``source`` removed (object stores have no directory
    rename, and ``ram://`` renames only the directory's own entry)."""
    if not is_url(source):
        shutil.move(source, target)
        return
    for root, names in _walk(source):
        here = join(target, root[len(source.rstrip("/")):].lstrip("/"))
        makedirs(here)
        for name in names:
            copy(join(root, name), join(here, name))
    rmtree(source)


def _walk(path):
    """``(directory, file names)`` of the URL directory ``path`` and of every directory in it,
    top-down, from :func:`listdir` (``tf.io.gfile.walk`` lists ``ram://``'s names of other
    directories too)."""
    names, subdirectories = [], []
    for name in listdir(path):
        (subdirectories if _call(join(path, name), "isdir") else names).append(name)
    yield path, names
    for name in subdirectories:
        yield from _walk(join(path, name))


def copy(source, target):
    """Copy the file ``source`` to ``target``, replacing it."""
    if not is_url(source):
        shutil.copyfile(source, target)
    else:
        _call(source, "copy", target, overwrite=True)


def size(path):
    """The size of the file ``path`` in bytes."""
    return os.path.getsize(path) if not is_url(path) else int(_call(path, "stat").length)


def mtime(path):
    """The modification time of ``path`` in seconds (0 where the filesystem keeps none)."""
    if not is_url(path):
        return os.path.getmtime(path)
    return _call(path, "stat").mtime_nsec / 1e9


def rmtree(path):
    """Remove directory ``path`` and everything in it (nothing when there is no ``path``).

    On ``ram://``, TensorFlow's ``rmtree`` also tries to remove the names that a directory's
    listing wrongly holds (see :func:`listdir`) and fails on them once the directory's own files
    are gone: that failure is an error only when the directory is still there."""
    if not is_url(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        _call(path, "rmtree")
    except FileNotFoundError:
        if isdir(path):
            raise
