"""``tfloop ckpts``: a log directory's checkpoints, the best ones kept, and where a resume starts.

    tfloop ckpts train_log/mnist
"""
from datetime import datetime

from tabulate import tabulate

from tfloop.cli.logdir import best_checkpoints, list_checkpoints, resume_point

__all__ = ["add_arguments", "run", "human_size", "plain_table"]


def add_arguments(parser):
    parser.add_argument("logdir", metavar="LOGDIR")


def human_size(size):
    """``1536 -> "1.5 KiB"``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"


def plain_table(headers, rows, right_aligned=()):
    """A table like tabulate's "simple" format, in time linear in its cells (tabulate guesses
    every cell's type: seconds for thousands of checkpoints). Cells are strings."""
    widths = [max([len(h) + 2] + [len(row[i]) for row in rows]) for i, h in enumerate(headers)]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right_aligned else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return "\n".join([line(headers), "  ".join("-" * w for w in widths)]
                     + [line(row) for row in rows])


def run(args):
    checkpoints = list_checkpoints(args.logdir)
    if checkpoints:
        rows = [[c["name"], str(c["step"]), human_size(c["bytes"]),
                 datetime.fromtimestamp(c["time"]).strftime("%Y-%m-%d %H:%M:%S")
                 if c["time"] else "-",
                 "yes" if c["resumable"] else "no"] for c in checkpoints]
        print(plain_table(["checkpoint", "global_step", "size", "written", "resume"], rows,
                          right_aligned={1}))
    else:
        print(f"No checkpoints in {args.logdir}.")
    best = best_checkpoints(args.logdir)
    if best:
        print()
        rows = [[b.get("checkpoint"), b.get("stat"), b.get("mode"), b.get("rank"),
                 b.get("value"), b.get("global_step")] for b in best]
        print(tabulate(rows, headers=["best checkpoint", "stat", "mode", "rank", "value",
                                      "global_step"], floatfmt=".5g"))
    state = resume_point(args.logdir)
    print()
    if state is None:
        print("Resume point: none (no resume state saved).")
    else:
        print(f"Resume point: {state['checkpoint']}, epoch {state.get('epoch')}, "
              f"step {state.get('local_step')} of that epoch (global step {state['global_step']}).")
    return 0
