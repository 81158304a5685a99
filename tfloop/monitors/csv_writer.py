"""CSVWriter: every scalar, one row per epoch, in ``<log dir>/stats.csv``."""
import csv
import io

from tfloop.monitors.records import RECORD_KEYS, RecordMonitor
from tfloop.utils import files, logger

__all__ = ["CSVWriter"]


def _parse_cell(cell):
    for kind in (int, float):
        try:
            return kind(cell)
        except ValueError:
            continue
    return cell


def columns_of(records):
    """``epoch_num``, ``global_step``, then every other name in the order it first appears."""
    columns = dict.fromkeys(RECORD_KEYS)
    for record in records:
        columns.update(dict.fromkeys(record))
    return list(columns)


class CSVWriter(RecordMonitor):
    """Write every scalar into a CSV file: one row per record (one per epoch by default).

    The columns are ``epoch_num``, ``global_step`` and every scalar name, in the order names first
    appear. Each row is appended in place with one small write, as :class:`JSONWriter` appends
    its records (the file ends in blank lines, which CSV readers skip, until training ends); when
    a new name appears, the whole file is rewritten (atomically) with the grown header, and
    earlier rows keep their values and have empty cells in the new columns. Resuming and backups
    work as for :class:`JSONWriter`; a last row cut short by a crash is left out when resuming.
    Skipped when there is no log directory.

    Args:
        filename (str): the file's name in the log directory.
        every_k_steps (int): also write a row every k steps.
        logdir (str): the directory; the log directory by default.
        on_error (str): ``"log"`` (a failed write is logged and retried with the next record)
            or ``"raise"`` (stop training).

    Example:
        >>> TrainConfig(..., monitors=[CSVWriter(), ScalarPrinter()])
        >>> pandas.read_csv("train_log/run1/stats.csv")
    """

    def __init__(self, filename="stats.csv", every_k_steps=None, logdir=None, on_error="log"):
        super().__init__(filename, every_k_steps=every_k_steps, logdir=logdir, on_error=on_error)
        self._columns = []
        self._row = io.StringIO()

    def read_records(self, path):
        try:
            text = files.read_text(path)
        except UnicodeDecodeError as e:
            raise ValueError(f"{path} is not UTF-8 text: {e}") from None
        if text and not text.endswith("\n"):
            cut = text.rfind("\n") + 1
            logger.warning(f"{self}: {path} ends in an incomplete row (its write was cut short): "
                           f"leaving out {text[cut:]!r}.")
            text = text[:cut]
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if reader.fieldnames is None or list(reader.fieldnames[:2]) != list(RECORD_KEYS):
            raise ValueError(f"{path} does not start with the columns {','.join(RECORD_KEYS)}")
        records = []
        for line, row in enumerate(reader, start=2):
            if None in row or None in row.values():
                raise ValueError(f"{path} line {line} does not have one cell per column")
            records.append({k: _parse_cell(v) for k, v in row.items() if v != ""})
        return records

    def write_records(self, records, f):
        f.write(self.records_text(records))

    def head_text(self, records):
        self._columns = columns_of(records)
        return self._csv_text(lambda writer: writer.writeheader())

    def record_text(self, record, first):
        if not record.keys() <= set(self._columns):
            return None
        return self._csv_text(lambda writer: writer.writerow(record))

    def _csv_text(self, write):
        self._row.seek(0)
        self._row.truncate()
        write(csv.DictWriter(self._row, fieldnames=self._columns, restval=""))
        return self._row.getvalue()
