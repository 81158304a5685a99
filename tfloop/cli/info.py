"""``tfloop info``: what a run was: its command, versions, duration, how it ended, its numbers.

    tfloop info train_log/mnist
"""
import os

from tabulate import tabulate

from tfloop.cli.logdir import (
    STATS_FILE,
    best_record,
    list_checkpoints,
    load_records,
    read_log,
    stat_names,
)

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


def run(args):
    log = read_log(args.logdir)
    records = (load_records(args.logdir)
               if os.path.isfile(os.path.join(args.logdir, STATS_FILE)) else [])
    if not log and not records:
        load_records(args.logdir)
    lines = [("log directory", os.path.abspath(args.logdir))]
    if "argv" in log:
        lines.append(("command", log["argv"]))
    if "versions" in log:
        lines.append(("versions", log["versions"]))
    if "start" in log:
        lines.append(("started", log["start"].strftime("%Y-%m-%d %H:%M:%S")))
        lines.append(("duration", format_duration((log["end"] - log["start"]).total_seconds())))
    lines.append(("status", log.get("status", "running, or ended without a final log line")))
    if records:
        last = records[-1]
        lines.append(("epochs", last.get("epoch_num", "?")))
        lines.append(("global step", last.get("global_step", "?")))
    lines.append(("checkpoints", len(list_checkpoints(args.logdir))))
    print(tabulate(lines, tablefmt="plain"))
    if records:
        rows = []
        for stat in stat_names(records):
            last = next((r[stat] for r in reversed(records) if stat in r), "")
            record, mode = best_record(records, stat)
            best = "" if record is None else record[stat]
            where = "" if record is None else record.get("epoch_num", "")
            rows.append([stat, last, best, mode, where])
        print()
        print(tabulate(rows, headers=["stat", "final", "best", "mode", "best epoch"],
                       floatfmt=".5g"))
    return 0
