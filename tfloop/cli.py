"""The ``tfloop`` command: look into a log directory from the shell.

    tfloop stats train_log/mnist_convnet              # stats.json as a table
    tfloop stats train_log/mnist_convnet --last 5 --columns 'val-|cost'
"""
import argparse
import re
import sys

from tabulate import tabulate

from tfloop.monitors.json_writer import JSONWriter

__all__ = ["main"]


def _stats_table(logdir, last=None, columns=None):
    records = JSONWriter.load_existing_json(logdir)
    if records is None:
        raise SystemExit("No stats.json in {}: is it a tfloop log directory with a JSONWriter?"
                         .format(logdir))
    if last is not None:
        records = records[-last:]
    names = []
    for record in records:
        names.extend(n for n in record if n not in names)
    fixed = [n for n in ("epoch_num", "global_step") if n in names]
    rest = sorted(n for n in names if n not in fixed)
    if columns is not None:
        try:
            pattern = re.compile(columns)
        except re.error as e:
            raise SystemExit("--columns {!r} is not a valid regular expression: {}.".format(
                columns, e))
        rest = [n for n in rest if pattern.search(n)]
    headers = fixed + rest
    rows = [[record.get(n, "") for n in headers] for record in records]
    return tabulate(rows, headers=headers, floatfmt=".5g")


def main(argv=None):
    """Entry point of the ``tfloop`` command; returns the exit code."""
    parser = argparse.ArgumentParser(prog="tfloop", description="Inspect tfloop log directories.")
    commands = parser.add_subparsers(dest="command", required=True)
    stats = commands.add_parser("stats", help="print stats.json of a log directory as a table")
    stats.add_argument("logdir")
    stats.add_argument("--last", type=int, help="only the last N records")
    stats.add_argument("--columns", help="only the scalars whose name matches this regex")
    args = parser.parse_args(argv)
    if args.last is not None and args.last <= 0:
        parser.error("--last must be a positive number, got {}".format(args.last))
    print(_stats_table(args.logdir, args.last, args.columns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
