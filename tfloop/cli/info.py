"""``tfloop info``: what a run was: its command, versions, duration, how it ended, its numbers.

    tfloop info train_log/mnist
"""
import os
from datetime import datetime

from tabulate import tabulate

from tfloop.cli.logdir import (
    STATS_FILE,
    best_record,
    has_file,
    hyper_params,
    list_checkpoints,
    load_records,
    read_log,
    run_status,
    stat_names,
)
from tfloop.utils import files
from tfloop.utils.logdir_format import STATUS_TIME_FORMAT

__all__ = ["add_arguments", "run", "format_duration"]


def add_arguments(parser):
    parser.add_argument("logdir", metavar="LOGDIR")


def format_duration(seconds):
    """``3725 -> "1 h 2 min 5 s"``."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours} h"] * bool(hours) + [f"{minutes} min"] * bool(hours or minutes)
    return " ".join(parts + [f"{secs} s"])


def _record_time(record, key):
    try:
        return datetime.strptime(record[key], STATUS_TIME_FORMAT).replace(tzinfo=None)
    except (KeyError, TypeError, ValueError):
        return None


def _start_and_end(record, log):
    """When the run started and when it ended (or last wrote a log line), local time: from
    status.json where it says, else from log.log's first and last line."""
    start = _record_time(record, "started") or log.get("start")
    end = _record_time(record, "ended") or log.get("end")
    if start is None or end is None or end < start:
        return start, start
    return start, end


def run(args):
    status = run_status(args.logdir)
    log = read_log(args.logdir)
    records = load_records(args.logdir) if has_file(args.logdir, STATS_FILE) else []
    if not log and not records and not status.record:
        load_records(args.logdir)
    lines = [("log directory", args.logdir if files.is_url(args.logdir)
              else os.path.abspath(args.logdir))]
    if "argv" in log:
        lines.append(("command", log["argv"]))
    if "versions" in log:
        lines.append(("versions", log["versions"]))
    start, end = _start_and_end(status.record, log)
    if start is not None:
        lines.append(("started", start.strftime("%Y-%m-%d %H:%M:%S")))
        lines.append(("duration", format_duration((end - start).total_seconds())))
    lines.append(("status", status.describe()))
    if records:
        last = records[-1]
        lines.append(("epochs", last.get("epoch_num", "?")))
        lines.append(("global step", last.get("global_step", "?")))
    lines.append(("checkpoints", len(list_checkpoints(args.logdir))))
    print(tabulate(lines, tablefmt="plain"))
    if records:
        rows = []
        params = hyper_params(args.logdir)
        for stat in stat_names(records):
            last = next((r[stat] for r in reversed(records) if stat in r), "")
            record, mode = best_record(records, stat, params)
            best = "" if record is None else record[stat]
            where = "" if record is None else record.get("epoch_num", "")
            rows.append([stat, last, best, mode, where])
        print()
        print(tabulate(rows, headers=["stat", "final", "best", "mode", "best epoch"],
                       floatfmt=".5g"))
    return 0
