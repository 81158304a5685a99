"""One owner per log directory: a lock file held for as long as a run uses the directory.

The lock is ``fcntl.flock`` on ``<dir>/.tfloop.lock``, which holds the owner's pid, host and start
time for the error message of the next comer. The kernel drops the lock when its owner exits, even
after ``kill -9``, so a lock file left by a dead process is stale by construction: the next run
takes it over (and says so). On a file system without ``flock`` (some network mounts) the pid in
the file decides: the lock is live while a process of that pid runs on the same host.

A directory given as a URL (``gs://``, ``ram://``; see :mod:`tfloop.utils.files`) has no lock:
object stores have no ``flock``, and a lock file there could not tell a live owner from a dead
one. :class:`DirLock` refuses such a directory rather than pretend, and :func:`is_locked` says
False for it; ``set_logger_dir`` warns that nothing keeps a second run out.
"""
import errno
import fcntl
import json
import os
import socket
import sys
import time
from typing import ClassVar

from tfloop.utils import files

__all__ = ["LOCK_FILE_NAME", "DirLock", "LogDirInUseError", "is_locked"]

LOCK_FILE_NAME = ".tfloop.lock"


class LogDirInUseError(RuntimeError):
    """Another live process owns the log directory (holds its lock).

    Example:
        >>> try:
        ...     logger.set_logger_dir("train_log/run1", action="keep")
        ... except LogDirInUseError as e:
        ...     print(e.owner["pid"])
    """

    def __init__(self, message, owner):
        super().__init__(message)
        self.owner = owner


def pid_alive(pid):
    """Whether a process of this host has id ``pid`` (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _describe(owner):
    if not owner:
        return "another process (its lock file names none)"
    return (f"process {owner.get('pid')} on host {owner.get('host')} (started "
            f"{owner.get('start', '?')}, argv: {owner.get('argv', '?')})")


class DirLock:
    """The lock of one directory, held by this process from :meth:`acquire` to :meth:`release`.

    Args:
        dirname (str): an existing directory.

    Attributes:
        path (str): the lock file.
        taken_over (dict): what the stale lock file this lock replaced said about its owner, or
            None; it has a ``"released"`` time when that owner ended cleanly.

    Example:
        >>> lock = DirLock("train_log/run1")
        >>> lock.acquire()        # LogDirInUseError when a live process holds it
        >>> lock.release()
    """

    _held: ClassVar[dict] = {}  # realpath of the directory -> the DirLock this process holds there

    def __init__(self, dirname: str):
        if files.is_url(dirname):
            raise ValueError(f"DirLock: {dirname} is not on a local disk, where no lock can be "
                             "held: keep one run per directory yourself.")
        self.dirname = os.path.realpath(dirname)
        self.path = os.path.join(self.dirname, LOCK_FILE_NAME)
        self.taken_over = None
        self._fd = None
        self._pid = None

    @classmethod
    def held_by_this_process(cls, dirname: str) -> "DirLock | None":
        """The lock this process holds on ``dirname``, or None."""
        lock = cls._held.get(os.path.realpath(dirname))
        return lock if lock is not None and lock._pid == os.getpid() else None

    def read_owner(self) -> "dict | None":
        """What the lock file says about its owner (a dict), or None when it says nothing."""
        try:
            with open(self.path, encoding="utf-8") as f:
                owner = json.loads(f.read() or "null")
        except (OSError, ValueError):
            return None
        return owner if isinstance(owner, dict) else None

    def acquire(self) -> None:
        """Take the lock.

        Raises:
            LogDirInUseError: a live process holds it; the message names that process.
        """
        if self.held_by_this_process(self.dirname) is self:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            self._lock(fd)
        except BaseException:
            os.close(fd)
            raise
        self.taken_over = self.read_owner()
        owner = {"pid": os.getpid(), "host": socket.gethostname(),
                 "start": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                 "argv": " ".join(sys.argv)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner).encode("utf-8"), 0)
        self._fd, self._pid = fd, os.getpid()
        DirLock._held[self.dirname] = self

    def _lock(self, fd):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                # No flock here (e.g. a network file system): the pid in the file decides.
                owner = self.read_owner()
                if owner and owner.get("host") == socket.gethostname() and \
                        owner.get("pid") != os.getpid() and pid_alive(int(owner.get("pid", 0))):
                    raise self._in_use(owner) from None
                return
        raise self._in_use(self.read_owner())

    def _in_use(self, owner):
        return LogDirInUseError(
            f"Log directory {self.dirname} is in use by {_describe(owner)}: two runs in one log "
            "directory would mix their checkpoints and stats. Wait for that run to end (or stop "
            "it), or use another directory. (A lock of a process that died is freed by the "
            f"system; its lock file {self.path} then does not block.)", owner)

    def release(self) -> None:
        """Give the lock up. The file stays, naming its last owner and marked ``"released"``, so
        the next comer can tell a clean end from a crash (whose file has no mark)."""
        if self._fd is None:
            return
        if DirLock._held.get(self.dirname) is self:
            del DirLock._held[self.dirname]
        fd, self._fd = self._fd, None
        if self._pid == os.getpid():
            self._mark_released(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                pass
        os.close(fd)

    def _mark_released(self, fd):
        owner = self.read_owner() or {}
        owner["released"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
        data = json.dumps(owner).encode("utf-8")
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
        except OSError:
            pass  # the mark only spares the next run a message

    @classmethod
    def _forget_after_fork(cls):
        # A forked child shares its parent's lock; closing its copy of the descriptor (without
        # unlocking) leaves the parent's lock in place.
        for lock in list(cls._held.values()):
            if lock._fd is not None:
                try:
                    os.close(lock._fd)
                except OSError:
                    pass
                lock._fd = None
        cls._held.clear()


os.register_at_fork(after_in_child=DirLock._forget_after_fork)


def is_locked(dirname: str) -> bool:
    """Whether a live process holds the lock of ``dirname`` (without taking it); always False
    for a URL, which has no lock.

    A lock file naming a process of this host that no longer runs is free without a look at the
    lock; otherwise a shared ``flock`` is tried and given back at once (where ``flock`` does not
    work, the owner named in the file is taken to hold it, as :meth:`DirLock.acquire` does).

    Example:
        >>> is_locked("train_log/run1")     # False once the run's process is gone, kill -9 too
    """
    if files.is_url(dirname):
        return False
    lock = DirLock(dirname)
    owner = lock.read_owner() or {}
    same_host = owner.get("host") == socket.gethostname()
    pid = owner.get("pid")
    if same_host and isinstance(pid, int) and not pid_alive(pid):
        return False
    try:
        fd = os.open(lock.path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        # Held; or no flock here, where the owner named in the file (alive, or of another host)
        # is taken to hold it, as DirLock.acquire does.
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
