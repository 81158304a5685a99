"""JSONWriter: every scalar, one record per epoch, in ``<log dir>/stats.json``."""
import json
import os

from tfloop.monitors.records import RecordMonitor
from tfloop.utils import files, logger
from tfloop.utils.fs import load_json_records, read_json_records
from tfloop.utils.logdir_format import STATS_FILE

__all__ = ["JSONWriter"]


class JSONWriter(RecordMonitor):
    """Write every scalar into ``stats.json``: a JSON list with one record per epoch.

    Each record has ``epoch_num``, ``global_step`` and the latest value of every scalar put during
    that epoch; with ``every_k_steps`` there are also records in between (see
    :class:`~tfloop.monitors.records.RecordMonitor`). Each record is one line, appended in place
    with one small write, so the cost of a record does not grow with the file; the file is always
    complete, valid JSON, also after a ``kill -9`` (at most the record being written is missing).
    While training runs the list ends in blank lines, dropped when training ends (a URL's file is
    rewritten whole after each record instead). A resumed run appends to the file of its
    predecessor epoch; a file that does not fit is backed up first, and a file that ends in an
    incomplete record (a machine that lost power) loses that record. Read it with ``json.load`` or
    ``pandas.read_json``. NaN and infinity are written as ``NaN`` and ``Infinity``, as Python's
    ``json`` does. One of the default monitors; skipped when there is no log directory.

    Args:
        every_k_steps (int): also make a record every k steps.
        logdir (str): the directory of ``stats.json``; the log directory by default.
        on_error (str): ``"log"`` (a failed write is logged and retried with the next record)
            or ``"raise"`` (stop training).

    Example:
        >>> TrainConfig(..., monitors=[TFEventWriter(), JSONWriter(every_k_steps=100)])
        >>> JSONWriter.load_existing_json("train_log/run1")[-1]["val-error"]
    """

    FILENAME = STATS_FILE
    tail_text = "]\n"

    def __init__(self, every_k_steps=None, logdir=None, on_error="log"):
        super().__init__(self.FILENAME, every_k_steps=every_k_steps, logdir=logdir,
                         on_error=on_error)

    def read_records(self, path):
        records, torn = load_json_records(path)
        if torn:
            logger.warning(f"{self}: {path} ends in an incomplete record (its write was cut "
                           f"short): keeping its {len(records)} complete records.")
        return records

    def write_records(self, records, f):
        f.write(self.records_text(records))

    def head_text(self, records):
        return "[\n"

    def record_text(self, record, first):
        return ("" if first else ",") + json.dumps(record) + "\n"

    @staticmethod
    def load_existing_json(dir=None):
        """The records of ``stats.json`` in ``dir`` (the log directory by default), or None when
        there is no such file.

        Raises:
            ValueError: the file exists but is not a JSON list of records.
        """
        dir = dir if dir is not None else logger.get_logger_dir()
        if dir is None:
            return None
        path = files.join(os.fspath(dir), JSONWriter.FILENAME)
        if not files.isfile(path):
            return None
        return read_json_records(path)

    @staticmethod
    def load_existing_epoch_number(dir=None):
        """The ``epoch_num`` of the last record of ``stats.json`` in ``dir`` (the log directory by
        default), or None when there is no such file or it has no records."""
        records = JSONWriter.load_existing_json(dir)
        if not records or "epoch_num" not in records[-1]:
            return None
        return int(records[-1]["epoch_num"])
