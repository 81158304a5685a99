"""``tfloop stats``: a log directory's ``stats.json`` as a table, CSV, markdown or JSON.

    tfloop stats train_log/mnist                       # every epoch, every stat
    tfloop stats train_log/mnist --last 5 --columns 'val-|cost'
    tfloop stats train_log/run1 train_log/run2 --best  # the best epoch of each stat, per run
"""
import csv
import io
import json
import math
import re
import struct
import sys

from tabulate import tabulate

from tfloop.cli.logdir import best_record, hyper_params, load_runs, run_status, stat_names

__all__ = ["add_arguments", "run", "stats_rows", "best_rows", "render", "shortest_float",
           "status_line"]

FORMATS = ("table", "csv", "markdown", "json")


def add_arguments(parser):
    parser.add_argument("logdirs", nargs="+", metavar="LOGDIR",
                        help="one or more log directories (several are shown side by side)")
    parser.add_argument("--last", type=int, help="only the last N records")
    parser.add_argument("--columns", metavar="REGEX",
                        help="only the stats whose name matches this regular expression")
    parser.add_argument("--best", action="store_true",
                        help="one row per stat: its best value (min, or max for accuracy-like "
                             "names) and the epoch it was reached in")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")


def compile_pattern(pattern, option="--columns"):
    """The compiled regex, or SystemExit naming the option and the regex error."""
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise SystemExit(f"{option} {pattern!r} is not a valid regular expression: {e}.") from None


def _selected(names, pattern):
    return [n for n in names if pattern is None or pattern.search(n)]


def stats_rows(runs, pattern=None, last=None):
    """``(headers, rows)`` of the records of ``runs`` (a list of ``(name, records)``).

    One run: a row per record. Several: a row per epoch with a column ``<run>/<stat>`` for each.
    """
    if len(runs) == 1:
        _, records = runs[0]
        records = records[-last:] if last else records
        names = _selected(stat_names(records), pattern)
        headers = [n for n in ("epoch_num", "global_step") if any(n in r for r in records)] + names
        return headers, [[r.get(n, "") for n in headers] for r in records]
    columns = []
    by_epoch = {}
    for name, records in runs:
        records = records[-last:] if last else records
        for stat in _selected(stat_names(records), pattern):
            columns.append((name, stat))
        for record in records:
            by_epoch.setdefault(record.get("epoch_num"), {})[name] = record
    epochs = sorted(e for e in by_epoch if e is not None)
    headers = ["epoch_num"] + [f"{run}/{stat}" for run, stat in columns]
    rows = [[epoch] + [by_epoch[epoch].get(run, {}).get(stat, "") for run, stat in columns]
            for epoch in epochs]
    return headers, rows


def best_rows(runs, pattern=None, params=None):
    """``(headers, rows)``: for each run and stat, the best value and where it was reached.

    Args:
        params (list): for each run, the names of its hyper-parameters (shown, not ranked), or
            None to judge them by name.
    """
    headers = ["run", "stat", "mode", "best", "epoch_num", "global_step", "last"]
    rows = []
    for (name, records), run_params in zip(runs, params or [None] * len(runs)):
        for stat in _selected(stat_names(records), pattern):
            record, mode = best_record(records, stat, run_params)
            last = next((r[stat] for r in reversed(records) if stat in r), "")
            if record is None:
                rows.append([name, stat, mode, "", "", "", last])
            else:
                rows.append([name, stat, mode, record[stat], record.get("epoch_num", ""),
                             record.get("global_step", ""), last])
    if len(runs) == 1:
        headers, rows = headers[1:], [row[1:] for row in rows]
    return headers, rows


def _as_float32(value):
    return struct.unpack("f", struct.pack("f", value))[0]


def shortest_float(value):
    """A float that is exactly a float32 (as TensorFlow's scalars are, widened to float64 in
    ``stats.json``) as the shortest decimal giving the same float32: ``9.999999747378752e-05``
    becomes ``0.0001``. Other values are returned as they are."""
    if not isinstance(value, float) or not math.isfinite(value):
        return value
    try:
        if _as_float32(value) != value:
            return value
    except OverflowError:
        return value
    for digits in range(1, 10):
        shorter = float(f"{value:.{digits}g}")
        if _as_float32(shorter) == value:
            return shorter
    return value


def render(headers, rows, fmt):
    """The table in one of :data:`FORMATS`; CSV and JSON write float32 values without the
    digits of their float64 widening."""
    if fmt in ("json", "csv"):
        rows = [[shortest_float(v) for v in row] for row in rows]
    if fmt == "json":
        return json.dumps([{h: v for h, v in zip(headers, row) if v != ""} for row in rows],
                          indent=1)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(headers)
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    return tabulate(rows, headers=headers, floatfmt=".5g",
                    tablefmt="github" if fmt == "markdown" else "simple")


def status_line(logdirs, names):
    """``run: finished`` (one run) or ``runs: a finished, b died (...)``."""
    states = [run_status(d).describe() for d in logdirs]
    if len(states) == 1:
        return f"run: {states[0]}"
    return "runs: " + ", ".join(f"{name} {state}" for name, state in zip(names, states))


def run(args):
    if args.last is not None and args.last <= 0:
        raise SystemExit(f"--last must be a positive number, got {args.last}.")
    pattern = compile_pattern(args.columns)
    runs = load_runs(args.logdirs)
    for logdir, (_, records) in zip(args.logdirs, runs):
        if not records:
            raise SystemExit(f"stats.json in {logdir} has no records yet (one is written per "
                             f"epoch); the run is {run_status(logdir).describe()}.")
    if args.best:
        headers, rows = best_rows(runs, pattern, [hyper_params(d) for d in args.logdirs])
    else:
        headers, rows = stats_rows(runs, pattern, args.last)
    print(render(headers, rows, args.format))
    status = status_line(args.logdirs, [name for name, _ in runs])
    if args.format in ("table", "markdown"):
        print(f"\n{status}")
    else:   # machine formats: stdout stays parseable
        print(status, file=sys.stderr)
    return 0
