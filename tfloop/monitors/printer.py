"""ScalarPrinter: the scalars of each epoch (or step) on the console and in the log file."""
import re

from tfloop.callbacks.schedule import Schedule
from tfloop.monitors.base import MonitorBase
from tfloop.utils import logger
from tfloop.utils.timer import Clock

__all__ = ["ScalarPrinter"]


def _compile(patterns, what):
    if patterns is None:
        return None
    if isinstance(patterns, str):
        patterns = [patterns]
    compiled = []
    for p in patterns:
        try:
            compiled.append(re.compile(p))
        except (re.error, TypeError) as e:
            raise ValueError(f"ScalarPrinter: {what} entry {p!r} is not a valid regex: "
                             f"{e}.") from None
    return compiled


def format_seconds(seconds):
    """``0.4123`` -> ``"0.41 s"``, ``83.6`` -> ``"84 s"``."""
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s"


def format_value(value):
    """``1234.5678`` -> ``"1234.6"``: five significant digits for floats, ints as they are."""
    if isinstance(value, float):
        return f"{value:.5g}"
    return str(value)


class ScalarPrinter(MonitorBase):
    """Log the scalars put since the last print, on one line per epoch (and per step).

    The line reads ``epoch 3 · step 96 · 1.52 s · cost 0.1234 · learning_rate 0.001 ·
    val-error 0.05``: the epoch, the global step, the time since the epoch began (its steps and
    the callbacks run after them, e.g. validation; epoch lines only), then the scalars, names
    sorted. With ``compact=False``, or with the logger at DEBUG level, every scalar also
    gets a ``name: value`` line of its own. A name is printed when some ``whitelist`` regex
    matches it and no ``blacklist`` regex does; matching is ``re.search`` (anywhere in the name),
    so anchor a pattern (``"^val-"``, ``"cost$"``) to match exactly. One of the default monitors.

    Args:
        enable_step (bool): print after every step (not the last of an epoch, which the epoch's
            print covers when ``enable_epoch``).
        enable_epoch (bool): print after every epoch.
        whitelist (list[str]): regexes of names to print; all names by default.
        blacklist (list[str]): regexes of names never to print.
        compact (bool): one line per print; False: one line per scalar instead.
        clock (callable): returns the time in seconds (a monotonic clock by default).

    Example:
        >>> ScalarPrinter(whitelist=["^val-", "cost"], blacklist=["throughput"])
    """

    def __init__(self, enable_step=False, enable_epoch=True, whitelist=None, blacklist=None,
                 compact=True, clock=None):
        if not enable_step and not enable_epoch:
            raise ValueError("ScalarPrinter with enable_step=False and enable_epoch=False would "
                             "never print; enable one, or leave ScalarPrinter out of the monitors.")
        self._enable_step = bool(enable_step)
        self._enable_epoch = bool(enable_epoch)
        self.when = Schedule(step_hook=self._enable_step)
        self._whitelist = _compile(whitelist, "whitelist")
        self._blacklist = _compile(blacklist, "blacklist") or []
        self._compact = bool(compact)
        self._allowed = {}
        self._pending = {}
        self._clock = clock or Clock()
        self._epoch_start = None

    def is_printed(self, name):
        """Whether scalar ``name`` passes the whitelist and blacklist."""
        allowed = self._allowed.get(name)
        if allowed is None:
            whitelisted = self._whitelist is None or any(r.search(name) for r in self._whitelist)
            allowed = whitelisted and not any(r.search(name) for r in self._blacklist)
            self._allowed[name] = allowed
        return allowed

    def process_scalar(self, name, value):
        if self.is_printed(name):
            self._pending[name] = value

    def _trigger_step(self):
        last_step = self.trainer.is_last_step
        if not (last_step and self._enable_epoch):
            self._print()

    def _before_epoch(self):
        self._epoch_start = self._clock()

    def _trigger(self):
        if self._enable_epoch:
            self._print(with_time=True)

    def _after_train(self):
        self._print()

    def _print(self, with_time=False):
        if not self._pending:
            return
        names = sorted(self._pending)
        if self._compact:
            parts = [f"epoch {self.epoch_num}", f"step {self.global_step}"]
            if with_time and self._epoch_start is not None:
                parts.append(format_seconds(self._clock() - self._epoch_start))
            parts += [f"{name} {format_value(self._pending[name])}" for name in names]
            logger.info(" · ".join(parts))
        if not self._compact or logger.is_debug_enabled():
            log = logger.info if not self._compact else logger.debug
            for name in names:
                log(f"{name}: {format_value(self._pending[name])}")
        self._pending = {}
