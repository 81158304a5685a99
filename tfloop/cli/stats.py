"""``tfloop stats``: a log directory's ``stats.json`` as a table, CSV, markdown or JSON.

    tfloop stats train_log/mnist                       # every epoch, every stat
    tfloop stats train_log/mnist --last 5 --columns 'val-|cost'
    tfloop stats train_log/run1 train_log/run2 --best  # the best epoch of each stat, per run
"""
import csv
import io
import json
import re

from tabulate import tabulate

from tfloop.cli.logdir import best_record, load_runs, stat_names

__all__ = ["add_arguments", "run", "stats_rows", "best_rows", "render"]

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


def best_rows(runs, pattern=None):
    """``(headers, rows)``: for each run and stat, the best value and where it was reached."""
    headers = ["run", "stat", "mode", "best", "epoch_num", "global_step", "last"]
    rows = []
    for name, records in runs:
        for stat in _selected(stat_names(records), pattern):
            record, mode = best_record(records, stat)
            last = next((r[stat] for r in reversed(records) if stat in r), "")
            if record is None:
                rows.append([name, stat, mode, "", "", "", last])
            else:
                rows.append([name, stat, mode, record[stat], record.get("epoch_num", ""),
                             record.get("global_step", ""), last])
    if len(runs) == 1:
        headers, rows = headers[1:], [row[1:] for row in rows]
    return headers, rows


def render(headers, rows, fmt):
    """The table in one of :data:`FORMATS`."""
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


def run(args):
    if args.last is not None and args.last <= 0:
        raise SystemExit(f"--last must be a positive number, got {args.last}.")
    pattern = compile_pattern(args.columns)
    runs = load_runs(args.logdirs)
    if args.best:
        headers, rows = best_rows(runs, pattern)
    else:
        headers, rows = stats_rows(runs, pattern, args.last)
    print(render(headers, rows, args.format))
    return 0
