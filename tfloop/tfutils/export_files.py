"""Where an export writes: a hidden sibling directory renamed when complete, removed on failure,
on SIGTERM and, when its process died (``kill -9``), by the next export beside it; its scratch
space kept the same way; a full disk said as such."""
import contextlib
import errno
import glob
import os
import re
import shutil
import signal
import tempfile
import threading
import uuid

from tfloop.compat import tf
from tfloop.utils import files, logger
from tfloop.utils.dirlock import pid_alive

__all__ = ["sibling_directory", "scratch_directory", "disk_full_said"]

_PARTIAL = re.compile(r"\.partial-(\d+)-[0-9a-f]+$")


class _Terminated(BaseException):
    """SIGTERM during an export, raised so that the partial directory is removed."""


def _remove_stale_partials(parent, name):
    """Remove the partial directories of ``name`` left by exports whose process is gone."""
    for path in glob.glob(os.path.join(glob.escape(parent), f".{glob.escape(name)}.partial-*")):
        match = _PARTIAL.search(path)
        if match and not pid_alive(int(match.group(1))):
            logger.info(f"Removing {path}, left by an export that did not finish.")
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def _removed_on_sigterm():
    """Make SIGTERM (when nothing handles it) end the process only after the block's cleanup:
    the signal raises in the block, and is raised again, unhandled, once the block has exited."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def terminate(signum, frame):
        raise _Terminated()

    signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _partial_path(parent, name):
    return files.join(parent, f".{name}.partial-{os.getpid()}-{uuid.uuid4().hex[:12]}")


@contextlib.contextmanager
def scratch_directory(target):
    """A new hidden directory beside a local ``target`` for an export's intermediate files,
    removed when the block exits; named as :func:`sibling_directory`'s partial directories, so a
    process killed meanwhile leaves it to the next export beside ``target``. Beside a URL it is
    a local temporary directory.

    Example:
        >>> with scratch_directory("export/1") as scratch:
        ...     write_intermediate_files(scratch)
    """
    if files.is_url(target):
        with tempfile.TemporaryDirectory(prefix="tfloop-export-") as scratch:
            yield scratch
        return
    target = os.path.abspath(target)
    scratch = _partial_path(os.path.dirname(target), os.path.basename(target))
    os.makedirs(scratch)
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def sibling_directory(target):
    """A hidden new directory beside ``target``, renamed to ``target`` when the block succeeds and
    removed when it fails or SIGTERM arrives. TF Serving takes only numbered directories for
    versions, so it never loads a partial export.

    Example:
        >>> with sibling_directory("export/1") as partial:
        ...     write_saved_model(partial)
    """
    url = files.is_url(target)
    target = files.resolve(target).rstrip("/") if url else os.path.abspath(target)
    parent, name = files.dirname(target), files.basename(target)
    if not url:
        _remove_stale_partials(parent, name)
    partial = _partial_path(parent, name)
    with _removed_on_sigterm():
        try:
            yield partial
            if url:     # no rename of a directory on object storage: its files are moved
                files.move_tree(partial, target)
            else:
                os.replace(partial, target)
        finally:
            if not url:
                shutil.rmtree(partial, ignore_errors=True)
            elif files.exists(partial):
                files.rmtree(partial)


def _no_space(error):
    if isinstance(error, OSError):
        return error.errno == errno.ENOSPC
    return isinstance(error, tf.errors.OpError) and "No space left on device" in error.message


@contextlib.contextmanager
def disk_full_said(who, path):
    """Turn a full disk while writing ``path`` into ``OSError(ENOSPC)`` naming it (TensorFlow
    reports it as a ResourceExhaustedError with a hint about memory)."""
    try:
        yield
    except (OSError, tf.errors.OpError) as e:
        if not _no_space(e):
            raise
        full = OSError(f"{who}: no space left on the device holding {path}; free some space "
                       "there or export elsewhere.")
        full.errno = errno.ENOSPC
        raise full from None
