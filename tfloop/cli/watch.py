"""``tfloop watch``: follow a training's ``stats.json`` as it grows, one line per new record.

It ends with the run: finished, stopped, failed, or died (its process gone without a final
status, e.g. after ``kill -9``); it waits for a directory that does not exist yet.

    tfloop watch train_log/mnist                  # until the run ends (or Ctrl-C)
    tfloop watch train_log/mnist --columns 'cost|val-' --interval 5
"""
import sys
import time

from tfloop.cli.logdir import STATS_FILE, has_file, is_dir, load_records
from tfloop.cli.stats import compile_pattern
from tfloop.utils.logdir_format import DIED, FAILED, LOG_FILE, read_run_status

__all__ = ["add_arguments", "run", "format_record", "follow"]


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


def _note(message):
    print(message, file=sys.stderr, flush=True)


def _wait_for_directory(logdir, interval, deadline):
    """Whether ``logdir`` exists, or came to exist before the deadline."""
    if is_dir(logdir):
        return True
    _note(f"Waiting for {logdir} to be created (a training run creates it when it starts; "
          "Ctrl-C to give up) ...")
    while not is_dir(logdir):
        if deadline and time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def _records_so_far(logdir):
    """The records of stats.json, or [] before the run has written it."""
    if not has_file(logdir, STATS_FILE):
        return []
    return load_records(logdir)


def _waiting_note(logdir):
    missing = "stats.json or log.log" if not has_file(logdir, LOG_FILE) else "stats.json"
    return (f"Waiting for the run in {logdir}: no {missing} there yet (stats.json gets a record "
            "at the end of each epoch) ...")


def follow(logdir, pattern, interval, deadline):
    """Print each new record of ``logdir``'s stats.json until the run ends or the deadline.

    Returns:
        int: 0 when the run finished or stopped (or the deadline came first), 1 when it failed or
        died, or when the directory never appeared.
    """
    if not _wait_for_directory(logdir, interval, deadline):
        _note(f"{logdir} did not appear before the --timeout.")
        return 1
    shown, waiting = 0, False
    while True:
        status = read_run_status(logdir)   # before the records: the last ones are then printed
        records = _records_so_far(logdir)
        if len(records) < shown:
            shown = 0
        for record in records[shown:]:
            print(format_record(record, pattern), flush=True)
        shown = len(records)
        if status.ended:
            print(f"The run {status.describe()}.", flush=True)
            return 1 if status.state in (FAILED, DIED) else 0
        if not records and not waiting:
            _note(_waiting_note(logdir))
            waiting = True
        if deadline and time.monotonic() > deadline:
            return 0
        time.sleep(interval)


def run(args):
    if args.interval <= 0:
        raise SystemExit(f"--interval must be positive, got {args.interval}.")
    pattern = compile_pattern(args.columns)
    deadline = time.monotonic() + args.timeout if args.timeout else None
    try:
        return follow(args.logdir, pattern, args.interval, deadline)
    except KeyboardInterrupt:
        return 0
