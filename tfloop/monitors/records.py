"""The shared logic of monitors that keep a table of records: one per epoch, optionally one every k
steps, written into a file of the log directory (``stats.json``, ``stats.csv``): appended in place
where the monitor defines how (:mod:`tfloop.utils.record_file`), else rewritten atomically.
"""
import abc
import os
from datetime import datetime

from tfloop.callbacks.schedule import Schedule
from tfloop.monitors.logdir import LogDirMonitor
from tfloop.utils import files, logger
from tfloop.utils.checks import check_positive_int, is_int
from tfloop.utils.fs import atomic_write
from tfloop.utils.record_file import RecordFile

__all__ = ["RecordMonitor"]

RECORD_KEYS = ("epoch_num", "global_step")


def backup_path(path):
    """A free name for a backup of ``path``: ``<path>.<timestamp>.bak`` (numbered if taken)."""
    base = f"{path}.{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    candidate = base + ".bak"
    index = 1
    while files.exists(candidate):
        candidate = f"{base}-{index}.bak"
        index += 1
    return candidate


class RecordMonitor(LogDirMonitor, abc.ABC):
    """Base class of monitors that write every scalar into records of a file.

    A record is a dict ``{"epoch_num": ..., "global_step": ..., <name>: <latest value>, ...}``.
    One is made at the end of every epoch (by ``trigger()``) with the latest value of every scalar
    put during that epoch; with ``every_k_steps``, one is also made after every step whose
    ``global_step`` is a multiple of k (except the last step of an epoch, which gets the epoch's
    record), with the scalars put since the previous record.

    How a record reaches the file: a subclass that defines :meth:`record_text` (``JSONWriter``,
    ``CSVWriter``) has each record appended in place with one small write, at a cost that does
    not grow with the file (:mod:`tfloop.utils.record_file`: a kill at any moment leaves a
    complete file, with at most the record being written missing; the file ends in blank lines
    until training ends). Other subclasses, and every file in a URL's directory (through
    TensorFlow's file layer, see :mod:`tfloop.utils.files`), have the whole file rewritten
    atomically after each record with :meth:`write_records`.

    When training starts and the file exists, new records are appended to it if it ends where this
    run starts: its last record is from the epoch before the starting epoch (a resumed run), or
    from the starting epoch itself at a global step not after the restored one (a run resumed
    mid-epoch). Otherwise the file is moved to ``<file>.<timestamp>.bak`` with a warning, and a new
    file is started.

    A write that fails (disk full, directory gone) is logged as an error naming the file, and
    training continues: the records stay in memory and the next write, which rewrites the whole
    file, retries them. ``on_error="raise"`` stops training instead.

    Subclasses implement :meth:`read_records` and :meth:`write_records`, and may define
    :meth:`head_text`, :meth:`record_text` and :attr:`tail_text` to be appended in place.

    Args:
        filename (str): the file's name, inside the log directory.
        every_k_steps (int): also make a record every k steps.
        logdir (str): the directory; the log directory by default.
        on_error (str): ``"log"`` (log loudly, keep training) or ``"raise"`` when a write fails.

    Example:
        >>> class LineWriter(RecordMonitor):
        ...     def read_records(self, path):
        ...         return [json.loads(line) for line in files.read_text(path).splitlines()]
        ...     def write_records(self, records, f):
        ...         f.writelines(json.dumps(r) + "\\n" for r in records)
    """

    def __init__(self, filename, every_k_steps=None, logdir=None, on_error="log"):
        super().__init__(logdir)
        if on_error not in ("log", "raise"):
            raise ValueError(f"{type(self).__name__}: on_error must be 'log' or 'raise', got "
                             f"{on_error!r}.")
        if not isinstance(filename, str) or not filename or os.path.basename(filename) != filename:
            raise ValueError(f"{type(self).__name__}: filename must be a plain file name (no "
                             f"directory), got {filename!r}.")
        self.filename = filename
        self.every_k_steps = check_positive_int(
            every_k_steps, f"{type(self).__name__}: every_k_steps", allow_none=True)
        self.when = Schedule(every_k_steps=self.every_k_steps,
                             step_hook=self.every_k_steps is not None)
        self.path = None
        self.records = []
        self._since_record = {}
        self._epoch_values = {}
        self._resume_records = None
        self._on_error = on_error
        self._failing = False
        self._file = None
        self._stale = True     # the file must be rewritten whole before the next append

    # ---- for subclasses -------------------------------------------------------------------------
    @abc.abstractmethod
    def read_records(self, path):
        """Return the list of record dicts stored in ``path``; raise ValueError if it is invalid."""

    @abc.abstractmethod
    def write_records(self, records, f):
        """Write every record to the text file object ``f``."""

    tail_text = ""
    """For appending in place: the text after the last record."""

    def head_text(self, records):
        """For appending in place: the text before the first of ``records``."""
        return ""

    def record_text(self, record, first):
        """For appending in place: the text of ``record`` (``first``: the file's first record),
        ending in a newline, or None when it cannot follow the file's records (then the whole
        file is rewritten, e.g. for a new CSV column). Not defined here: records are written by
        rewriting the whole file with :meth:`write_records`."""
        raise NotImplementedError

    def records_text(self, records):
        """The whole file's text in the appended layout: head, every record, tail."""
        return self._body_text(records) + self.tail_text

    def _body_text(self, records):
        return self.head_text(records) + "".join(
            self.record_text(r, i == 0) for i, r in enumerate(records))

    def _appends(self):
        return type(self).record_text is not RecordMonitor.record_text

    # ---- hooks ----------------------------------------------------------------------------------
    def _setup_graph(self):
        super()._setup_graph()
        if self.logdir is not None:
            self.path = files.join(self.logdir, self.filename)
            for other in self.trainer.monitors.backends:
                if other is self:
                    break
                if isinstance(other, RecordMonitor) and other.path == self.path:
                    raise ValueError(f"Two monitors write {self.path} ({other} and {self}): each "
                                     "would overwrite the other's records. Keep one, or give one "
                                     "a logdir= of its own.")
            if self._appends() and not files.is_url(self.path):
                self._file = RecordFile(self.path, self.tail_text.encode("utf-8"))

    def _before_train(self):
        self._stale = True
        if self.path is not None:
            self.records = self._load_for_resume()

    def process_scalar(self, name, value):
        if name in RECORD_KEYS:
            raise ValueError(f"{self}: a scalar cannot be named {name!r}: records use that key for "
                             "the training position.")
        self._since_record[name] = value
        self._epoch_values[name] = value

    def _trigger_step(self):
        if not self.trainer.is_last_step:  # the epoch's record comes next
            self._add_record(self._since_record)

    def _trigger(self):
        values, self._epoch_values = self._epoch_values, {}
        self._add_record(values)

    def _after_train(self):
        try:
            self._record_late_values()
        finally:
            self._finish_file()

    def _record_late_values(self):
        if not self._epoch_values:
            return
        last = self.records[-1] if self.records else None
        position = (self.epoch_num, self.global_step)
        if last is not None and (last.get("epoch_num"), last.get("global_step")) == position:
            # Put after the record of this position was made, e.g. in another after_train.
            values, self._epoch_values = self._epoch_values, {}
            last.update(values)
            self._write()
        elif self.trainer.is_last_step:
            # The epoch's steps all ran, but training stopped before our trigger_epoch.
            self._trigger()
        else:
            logger.info(f"{self}: the scalars of unfinished epoch {self.epoch_num} "
                        f"({', '.join(sorted(self._epoch_values))}) are not recorded.")

    # ---- helpers --------------------------------------------------------------------------------
    def _add_record(self, values):
        record = {"epoch_num": self.epoch_num, "global_step": self.global_step}
        record.update(values)
        self._since_record = {}
        self.records.append(record)
        self._write(record)

    def _write(self, new=None):
        """Write ``new``, the last of the records, or (None) rewrite the file with every record."""
        if self.path is None:
            return
        try:
            if new is None or not self._append(new):
                self._rewrite()
        except OSError as e:
            self._stale = True
            if self._on_error == "raise":
                raise
            if not self._failing:  # once per burst of failures, not once per record
                logger.error(f"{self} could not write {self.path} at global step "
                             f"{self.global_step}: {e}. Its {len(self.records)} record(s) are "
                             "kept in memory and written with the next record; training "
                             "continues.")
            self._failing = True
            return
        if self._failing:
            self._failing = False
            logger.info(f"{self} wrote {self.path} again, with every record.")

    def _append(self, record):
        if self._file is None or self._stale:
            return False
        text = self.record_text(record, len(self.records) == 1)
        if text is None:
            return False
        data = text.encode("utf-8")
        if not self._file.append(data):
            if not self._file.is_open:
                return False
            self._file.grow(data)
        return True

    def _rewrite(self):
        self._stale = True
        if self._file is None:
            atomic_write(self.path, lambda f: self.write_records(self.records, f))
        else:
            self._file.rewrite(self._body_text(self.records).encode("utf-8"))
        self._stale = False

    def _finish_file(self):
        if self._file is None:
            return
        try:
            self._file.finish()
        except OSError as e:
            logger.error(f"{self} could not compact {self.path} at the end of training ({e}); "
                         "it holds every record, followed by blank lines.")

    def _load_for_resume(self):
        if not files.exists(self.path):
            return []
        if not files.isfile(self.path):
            logger.error(f"{self}: {self.path} exists but is not a file (a directory?), so no "
                         "record can be written there; training continues with the records in "
                         f"memory. Remove it, or give {self} a logdir= of its own.")
            return []
        try:
            records = self.read_records(self.path)
        except ValueError as e:
            self._backup(f"it cannot be read ({e})")
            return []
        except OSError as e:
            logger.error(f"{self}: cannot read {self.path} ({e}); training continues, and its "
                         "records will replace the file.")
            return []
        if not records:
            return []
        if not all(is_int(r.get(key)) for r in records for key in RECORD_KEYS):
            self._backup(f"its records lack integer {RECORD_KEYS[0]} and {RECORD_KEYS[1]} (it was "
                         "not written by a monitor of tfloop)")
            return []
        keep = self._resume_records
        predecessor = self.epoch_num  # starting_epoch - 1, before the first epoch
        if keep is not None and len(records) >= keep:
            # Records of finished epochs up to the restored step, made after the resume state was
            # written (the record of an epoch that ended in after_train), belong to it too.
            later = [r for r in records[keep:] if isinstance(r.get("global_step"), int)
                     and r["global_step"] <= self.global_step and r["epoch_num"] <= predecessor]
            logger.info(f"Found {self.path} with {len(records)} records, {keep + len(later)} of "
                        "them written before the checkpoint this run resumes from: continuing "
                        "after those.")
            return records[:keep] + later
        last = records[-1]
        last_epoch, last_step = last.get("epoch_num"), last.get("global_step")
        # A run resumed mid-epoch may follow step records of its own starting epoch.
        resumed_mid_epoch = last_epoch == predecessor + 1 and isinstance(last_step, int) and \
            0 < last_step <= self.global_step
        if last_epoch == predecessor or resumed_mid_epoch:
            logger.info(f"Found {self.path} with {len(records)} records up to epoch {last_epoch}: "
                        "appending to it.")
            return records
        self._backup(f"its last record is from epoch {last_epoch} (global step {last_step}), but "
                     f"training starts at epoch {predecessor + 1} (global step {self.global_step})")
        return []

    def _state_dict(self):
        return {"records": len(self.records)}

    def _load_state_dict(self, state):
        self._resume_records = int(state["records"])

    def _backup(self, reason):
        backup = backup_path(self.path)
        files.rename(self.path, backup)
        logger.warning(f"{self}: {self.path} exists but {reason}; moved it to {backup} and "
                       "starting a new one.")

    def __str__(self):
        return type(self).__name__
