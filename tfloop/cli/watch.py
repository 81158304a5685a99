"""``tfloop watch``: follow a training's ``stats.json`` as it grows, one line per new record.

    tfloop watch train_log/mnist                  # until the run ends (or Ctrl-C)
    tfloop watch train_log/mnist --columns 'cost|val-' --interval 5
"""
import os
import time

from tfloop.cli.logdir import STATS_FILE, load_records, read_log
from tfloop.cli.stats import compile_pattern

__all__ = ["add_arguments", "run", "format_record"]


def add_arguments(parser):
    parser.add_argument("logdir", metavar="LOGDIR")
    parser.add_argument("--interval", type=float, default=2.0,
                        help="seconds between looks at stats.json (default: %(default)s)")
    parser.add_argument("--columns", metavar="REGEX", help="only the stats matching this regex")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="stop after this long even if the run goes on")


def format_record(record, pattern=None):
    """``epoch 3 · step 96 · cost 0.1234 · val-error 0.05``: one record on one line."""
    parts = []
    if "epoch_num" in record:
        parts.append(f"epoch {record['epoch_num']}")
    if "global_step" in record:
        parts.append(f"step {record['global_step']}")
    for name in sorted(record):
        if name in ("epoch_num", "global_step") or (pattern and not pattern.search(name)):
            continue
        value = record[name]
        parts.append(f"{name} {value:.5g}" if isinstance(value, float) else f"{name} {value}")
    return " · ".join(parts)


def _wait_for_stats(logdir, interval, deadline):
    path = os.path.join(logdir, STATS_FILE)
    while not os.path.isfile(path):
        if not os.path.isdir(logdir):
            load_records(logdir)
        if read_log(logdir).get("status") or (deadline and time.monotonic() > deadline):
            return False
        time.sleep(interval)
    return True


def run(args):
    if args.interval <= 0:
        raise SystemExit(f"--interval must be positive, got {args.interval}.")
    pattern = compile_pattern(args.columns)
    deadline = time.monotonic() + args.timeout if args.timeout else None
    shown = 0
    try:
        if not _wait_for_stats(args.logdir, args.interval, deadline):
            load_records(args.logdir)
        while True:
            records = load_records(args.logdir)
            if len(records) < shown:
                shown = 0
            for record in records[shown:]:
                print(format_record(record, pattern), flush=True)
            shown = len(records)
            status = read_log(args.logdir).get("status")
            if status:
                print(status)
                return 0
            if deadline and time.monotonic() > deadline:
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        return 0
