"""Measuring how long each callback takes in each hook."""
import time

from tabulate import tabulate

from tfloop.callbacks.base import Callback
from tfloop.utils import logger
from tfloop.utils.checks import check_positive_int, is_number

__all__ = ["CallbackTimeLogger"]

# Public hook -> the methods a callback defines when it does work in that hook.
_TIMED_HOOKS = (
    ("before_train", ("_before_train",)),
    ("before_epoch", ("_before_epoch",)),
    ("before_run", ("_before_run",)),
    ("after_run", ("_after_run",)),
    ("trigger_step", ("_trigger_step",)),
    ("after_epoch", ("_after_epoch",)),
    ("trigger_epoch", ("_trigger_epoch", "_trigger")),
    ("trigger", ("_trigger",)),       # a trigger() on a schedule of its own (PeriodicTrigger)
)


def _works_in(cb, hook, methods):
    """Whether ``cb`` does work in ``hook``: the group's own answer for the per-step hooks;
    for the others, whether it, or a callback it wraps, defines one of ``methods`` below what
    only passes calls on."""
    if hook in ("before_run", "after_run"):
        return cb.uses_run_hooks()
    if hook == "trigger_step":
        return cb.uses_step_hook()
    names = (*methods, *(method[1:] for method in methods))  # underscore and public forms
    return any(inner._works_in(names) for inner in cb.walk())


def _unique_labels(callbacks):
    labels, seen = [], {}
    for cb in callbacks:
        name = str(cb)
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return labels


class CallbackTimeLogger(Callback):
    """Time every other callback in every hook it does work in, and report where epochs go.

    The ``Callbacks`` group that holds it times, in its one dispatching call, the hooks that its
    other callbacks do work in (before_train, before_epoch, before_run, after_run, trigger_step,
    after_epoch, trigger_epoch; a wrapper such as ``PeriodicTrigger`` is timed as a whole); no
    callback is changed. An epoch runs from the first
    callback's ``before_epoch`` to the end of the last callback's ``trigger_epoch``; after it, when
    the callbacks took at least ``min_share`` of that time, a table is logged: callback, hook,
    total ms, calls, share of the epoch.

    The numbers are also data: :meth:`get_stats` (whole run) and :attr:`epoch_stats` (one entry
    per epoch).

    Args:
        min_share (float): log the table only when callbacks took at least this fraction of the
            epoch (0 logs every epoch, 1 never).
        max_rows (int): the table shows the slowest hooks only.
        clock (callable): time source in seconds; ``time.perf_counter`` by default.

    Example:
        >>> callbacks = [CallbackTimeLogger(min_share=0.1), ModelSaver(), InferenceRunner(...)]
        >>> # after an epoch where callbacks took 10% or more of the time:
        >>> # callback         hook           total ms    calls  share of epoch
        >>> # InferenceRunner  trigger_epoch    812.4         1  41.2%
    """

    def __init__(self, min_share=0.05, max_rows=20, clock=time.perf_counter):
        if not (is_number(min_share) and 0 <= min_share <= 1):
            raise ValueError(f"CallbackTimeLogger min_share must be a fraction in [0, 1], got "
                             f"{min_share!r}.")
        self.min_share = min_share
        self.max_rows = check_positive_int(max_rows, "CallbackTimeLogger max_rows")
        self._clock = clock
        self._cells = {}
        self._cell_of = {}   # (id(callback), hook) -> its cell, for the hooks it does work in
        self._totals = {}
        self._epoch_start = None
        self.epoch_stats = []

    def watch(self, callbacks):
        """Time ``callbacks`` (the group's others, after their ``setup_graph``) in the hooks
        they do work in."""
        for cb, label in zip(callbacks, _unique_labels(callbacks)):
            for hook, methods in _TIMED_HOOKS:
                if _works_in(cb, hook, methods):
                    self._cell_of[(id(cb), hook)] = self._cells[(label, hook)] = [0.0, 0]

    def time_call(self, cb, hook, args):
        """``cb``'s public ``hook(*args)``, timed when ``cb`` does work in it (the group's
        dispatching call)."""
        cell = self._cell_of.get((id(cb), hook))
        if cell is None:
            return getattr(cb, hook)(*args)
        clock = self._clock
        start = clock()
        try:
            return getattr(cb, hook)(*args)
        finally:
            cell[0] += clock() - start
            cell[1] += 1

    def _fold_cells(self):
        for key, cell in self._cells.items():
            if cell[1]:
                total = self._totals.setdefault(key, [0.0, 0])
                total[0] += cell[0]
                total[1] += cell[1]
                cell[0], cell[1] = 0.0, 0

    def start_epoch(self):
        """An epoch starts (before the first callback's ``before_epoch``)."""
        self._fold_cells()
        self._epoch_start = self._clock()

    def end_epoch(self, finished=True):
        """An epoch ended (after the last callback's ``trigger_epoch``), or training did
        (``finished=False``): log its table."""
        if self._epoch_start is None:
            return
        seconds = self._clock() - self._epoch_start
        self._epoch_start = None
        rows = [{"callback": label, "hook": hook, "seconds": cell[0], "calls": cell[1],
                 "share": cell[0] / seconds if seconds > 0 else 0.0}
                for (label, hook), cell in self._cells.items() if cell[1]]
        rows.sort(key=lambda row: row["seconds"], reverse=True)
        share = sum(row["share"] for row in rows)
        self.epoch_stats.append({"epoch": self.epoch_num, "seconds": seconds, "share": share,
                                 "finished": finished, "rows": rows})
        if rows and share >= self.min_share and self.min_share < 1:
            self._log_table(rows, seconds, share, finished)

    def _log_table(self, rows, seconds, share, finished):
        table = tabulate(
            [(r["callback"], r["hook"], r["seconds"] * 1000, r["calls"], f"{r['share']:.1%}")
             for r in rows[:self.max_rows]],
            headers=["callback", "hook", "total ms", "calls", "share of epoch"], floatfmt=".2f")
        stopped = "" if finished else " (stopped early)"
        logger.info(f"Callbacks took {share:.1%} of epoch {self.epoch_num}{stopped} "
                    f"({share * seconds:.3f} s of {seconds:.3f} s):\n{table}")

    def _after_train(self):
        self.end_epoch(finished=False)
        self._fold_cells()

    def get_stats(self):
        """Time per callback and hook over the whole run so far, slowest first.

        Returns:
            list[dict]: ``{"callback", "hook", "seconds", "calls"}`` per instrumented hook that ran.
        """
        merged = {key: list(total) for key, total in self._totals.items()}
        for key, cell in self._cells.items():
            if cell[1]:
                total = merged.setdefault(key, [0.0, 0])
                total[0] += cell[0]
                total[1] += cell[1]
        rows = [{"callback": label, "hook": hook, "seconds": seconds, "calls": calls}
                for (label, hook), (seconds, calls) in merged.items()]
        return sorted(rows, key=lambda row: row["seconds"], reverse=True)
