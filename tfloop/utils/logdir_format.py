"""The log directory's format: its file names, the stats records and the run's status.

The one description of a log directory, shared by the side that writes it (the trainer, its
callbacks and monitors) and the side that reads it (the ``tfloop`` command). Files only, no
TensorFlow.

A run's status is data: the trainer writes ``status.json`` (atomically) when training starts and
when it ends; :func:`read_run_status` reads it and tells a run that died (``kill -9``, a lost
machine) from a live one by the directory's lock (:mod:`tfloop.utils.dirlock`), which the system
frees when its owner dies. Log directories written before ``status.json`` existed are judged from
the last line of ``log.log`` that says how training ended.

A log directory can be a URL (``gs://bucket/run``, ``ram://run``): its files are read through
:mod:`tfloop.utils.files`. Such a directory has no lock, so a ``running`` record there is taken at
its word (a run that died there cannot be told from a live one).

Example:
    >>> write_run_status("train_log/run1", RUNNING)
    >>> write_run_status("train_log/run1", STOPPED, reason="EarlyStopping: no improvement")
    >>> read_run_status("train_log/run1").describe()
    'stopped (EarlyStopping: no improvement)'
"""
import json
import os
import socket
import sys
import time
from dataclasses import dataclass, field

from tfloop.utils import files
from tfloop.utils.checkpoint_files import checkpoint_step, list_checkpoint_files
from tfloop.utils.dirlock import LOCK_FILE_NAME, DirLock, is_locked
from tfloop.utils.fs import atomic_write, read_json_records

__all__ = ["STATS_FILE", "LOG_FILE", "STATUS_FILE", "LOCK_FILE", "CHECKPOINT_PREFIX",
           "RESUME_SUFFIX", "ITERATOR_SUFFIX", "BEST_PREFIXES", "POSITION_FIELDS",
           "RUNNING", "FINISHED", "STOPPED", "FAILED", "DIED", "UNKNOWN", "RunStatus",
           "write_run_status", "read_run_status", "read_stats", "stat_names",
           "list_checkpoints", "best_checkpoint_records", "newest_resume_state",
           "status_from_log_line", "STATUS_TIME_FORMAT"]

STATS_FILE = "stats.json"            # JSONWriter: a JSON list, one record per epoch
LOG_FILE = "log.log"                 # the logger's lines
STATUS_FILE = "status.json"          # the run's status, written by the trainer
LOCK_FILE = LOCK_FILE_NAME           # held by the run that owns the directory
CHECKPOINT_PREFIX = "model"          # ModelSaver: model-<global_step>.index / .data-*
RESUME_SUFFIX = ".resume.json"       # next to a checkpoint: where a resumed run starts
ITERATOR_SUFFIX = ".iterator"        # next to a checkpoint: the tf.data iterator's state
BEST_PREFIXES = ("min-", "max-")     # MinSaver/MaxSaver: min-<stat>.index and min-<stat>.json
POSITION_FIELDS = ("epoch_num", "global_step")   # in every stats record; the rest are scalars

RUNNING, FINISHED, STOPPED, FAILED, DIED = "running", "finished", "stopped", "failed", "died"
UNKNOWN = "unknown"                  # nothing in the directory says (e.g. not started yet)
STATES = (RUNNING, FINISHED, STOPPED, FAILED)   # the states written; DIED is only ever read
_STATUS_VERSION = 1
STATUS_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"   # status.json's "started" and "ended", local time


@dataclass(frozen=True)
class RunStatus:
    """How a run stands, as read from its log directory.

    Attributes:
        state (str): ``running``, ``finished``, ``stopped``, ``failed``, ``died`` or ``unknown``.
        reason (str): why it stopped (the ``StopTraining`` message, the signal), the error it
            failed with, or why it is judged to have died; None when there is nothing to say.
        record (dict): ``status.json`` as written (``pid``, ``host``, ``started``, ``ended``,
            ``global_step``, ``hyper_params``, ...); empty for a directory without one.

    Example:
        >>> status = read_run_status("train_log/run1")
        >>> status.state, status.ended
        ('stopped', True)
    """

    state: str
    reason: "str | None" = None
    record: dict = field(default_factory=dict)

    @property
    def ended(self):
        """Whether the run is over (finished, stopped, failed or died)."""
        return self.state not in (RUNNING, UNKNOWN)

    def describe(self):
        """One line: ``finished``, ``stopped (reason)``, ``failed (error)``, ``running (pid N)``."""
        if self.state == RUNNING and self.record.get("pid") is not None:
            return f"running (pid {self.record['pid']} on {self.record.get('host', '?')})"
        return f"{self.state} ({self.reason})" if self.reason else self.state


def _now():
    return time.strftime(STATUS_TIME_FORMAT)


def _read_status_record(logdir):
    try:
        record = json.loads(files.read_text(files.join(logdir, STATUS_FILE)))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("state") in STATES else None


def write_run_status(logdir, state, reason=None, **fields):
    """Write ``<logdir>/status.json`` atomically: the run's ``state`` and what goes with it.

    ``running`` starts a new record (with this process's pid and host, ``argv`` and ``started``);
    the other states keep that record's fields and add ``ended``.

    Args:
        logdir (str): the log directory.
        state (str): one of ``running``, ``finished``, ``stopped``, ``failed``.
        reason (str): why the run stopped, or the error it failed with.
        **fields: more JSON values to record (``global_step``, ``epoch_num``, ``hyper_params``).

    Returns:
        dict: the record written.
    """
    if state not in STATES:
        raise ValueError(f"write_run_status: state {state!r} is not one of {', '.join(STATES)}.")
    if state == RUNNING:
        record = {"version": _STATUS_VERSION, "pid": os.getpid(), "host": socket.gethostname(),
                  "argv": " ".join(sys.argv), "started": _now()}
    else:
        record = dict(_read_status_record(logdir) or {}, ended=_now())
    record.update(fields, state=state)
    if reason is not None:
        record["reason"] = str(reason)
    else:
        record.pop("reason", None)
    atomic_write(files.join(logdir, STATUS_FILE), json.dumps(record, indent=1) + "\n")
    return record


def status_from_log_line(message):
    """``(state, reason)`` of a log message that says how training ended (the lines of
    ``log.log`` in directories without ``status.json``), or None for any other message."""
    if message.startswith("Training has finished"):
        return FINISHED, None
    if message.startswith("Training stopped: "):
        return STOPPED, message[len("Training stopped: "):]
    if message.startswith(("Ctrl-C", "Stopped on SIG")):
        return STOPPED, message
    if message.startswith("Training failed"):
        return FAILED, message.partition(": ")[2] or message
    return None


def _status_from_log(logdir):
    """The state that ``log.log``'s last "how it ended" line gives, after the last start."""
    found = None
    try:
        text = files.read_text(files.join(logdir, LOG_FILE), errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        message = line.partition("] ")[2]
        if message.startswith("Argv: "):
            found = None     # a new run started in this directory
        found = status_from_log_line(message) or found
    return found


def _newer_owner(logdir, record):
    """What the lock says of a live process other than the one that wrote ``record`` (a new run
    in the directory, before its training writes ``running``), or None."""
    if files.is_url(logdir):
        return None     # no lock there
    owner = DirLock(logdir).read_owner()
    if not owner or (owner.get("pid"), owner.get("host")) == (record.get("pid"),
                                                              record.get("host")):
        return None
    return owner if is_locked(logdir) else None


def read_run_status(logdir):
    """The :class:`RunStatus` of the run in ``logdir``.

    A ``running`` record whose directory lock no live process holds is a run that died; an ended
    record while another live process holds the lock is a new run starting (``running``). Without
    ``status.json`` (older log directories, or a run before its training started), the last line
    of ``log.log`` saying how training ended decides; with none, a held lock means running and a
    log or lock file left behind means the run died.
    """
    record = _read_status_record(logdir)
    if record is not None:
        if record["state"] != RUNNING:
            newer = _newer_owner(logdir, record)
            if newer is not None:
                return RunStatus(RUNNING, None, newer)
            return RunStatus(record["state"], record.get("reason"), record)
        if is_locked(logdir):
            return RunStatus(RUNNING, None, record)
        if files.is_url(logdir):
            return RunStatus(RUNNING, "as status.json says: a directory on this filesystem has no "
                                      "lock, so a run that died cannot be told from a live one",
                             record)
        return RunStatus(DIED, f"process {record.get('pid')} on {record.get('host', '?')} is "
                               "gone without writing how training ended", record)
    from_log = _status_from_log(logdir)
    if from_log is not None:
        return RunStatus(*from_log)
    if is_locked(logdir):
        return RunStatus(RUNNING)
    if any(files.isfile(files.join(logdir, name)) for name in (LOG_FILE, LOCK_FILE)):
        return RunStatus(DIED, "its log ends without saying how training ended, and no process "
                               "holds the directory")
    return RunStatus(UNKNOWN)


def read_stats(logdir):
    """The records of ``<logdir>/stats.json``, each ``{epoch_num, global_step, <stat>: value}``.

    Raises:
        OSError: no such file. ValueError: it is not a JSON list of records.
    """
    return read_json_records(files.join(logdir, STATS_FILE))


def stat_names(records):
    """Every scalar name in ``records`` except the position fields, sorted."""
    names = set()
    for record in records:
        names.update(record)
    return sorted(names - set(POSITION_FIELDS))


def list_checkpoints(logdir):
    """The checkpoints ``<name>-<step>`` that have an index file, oldest step first; the best
    checkpoints kept under ``min-``/``max-`` names are left out. One listing of the directory
    (:func:`~tfloop.utils.checkpoint_files.list_checkpoint_files`).

    Returns:
        list[dict]: ``name``, ``step``, ``bytes`` (its files, resume state excluded), ``time``
        (the index file's modification time; None where the filesystem keeps none) and
        ``resumable`` (a resume state was saved with it).
    """
    return [{"name": c.name, "step": c.step,
             "bytes": sum(files.size(files.join(logdir, n)) for n in c.files
                          if not n.endswith(".json")),
             "time": c.time, "resumable": c.name + RESUME_SUFFIX in c.files}
            for c in list_checkpoint_files(logdir)
            if c.step is not None and c.has_index and not c.name.startswith(BEST_PREFIXES)]


def _read_json(path):
    try:
        return json.loads(files.read_text(path))
    except (OSError, ValueError):
        return None


def best_checkpoint_records(logdir):
    """The records of ``MinSaver``/``MaxSaver`` (``min-<stat>.json``, or ``<filename>.json``):
    dicts with ``stat``, ``mode`` and ``checkpoints`` (each ``rank``, ``checkpoint``,
    ``global_step``, ``value``), sorted by file name; unreadable ones are left out."""
    records = []
    for name in sorted(files.listdir(logdir)):
        if not name.endswith(".json") or name.endswith(RESUME_SUFFIX) or \
                name in (STATS_FILE, STATUS_FILE):
            continue
        record = _read_json(files.join(logdir, name))
        if isinstance(record, dict) and record.get("mode") in ("min", "max") and \
                isinstance(record.get("checkpoints"), list):
            records.append(record)
    return records


def newest_resume_state(logdir):
    """The resume state of the newest checkpoint that has a readable one, as a dict with its
    ``checkpoint`` name added, or None. Reads only as many files as it must."""
    states = []
    for name in files.listdir(logdir):
        if name.endswith(RESUME_SUFFIX):
            step = checkpoint_step(name[:-len(RESUME_SUFFIX)])
            if step is not None:
                states.append((step, name))
    for _, name in sorted(states, reverse=True):
        state = _read_json(files.join(logdir, name))
        if isinstance(state, dict) and isinstance(state.get("global_step"), int):
            return dict(state, checkpoint=name[:-len(RESUME_SUFFIX)])
    return None
