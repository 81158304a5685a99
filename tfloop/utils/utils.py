"""Small helpers: environment changes, run-once checks, progress bars, readable durations, and
the random number generators (:mod:`tfloop.utils.rng`, which DataFlows draw from)."""
import contextlib
import inspect
import os
import sys

import tqdm

from tfloop.utils import logger
from tfloop.utils.rng import fix_rng_seed, get_rng

__all__ = ["change_env", "get_rng", "fix_rng_seed", "get_tqdm", "get_tqdm_kwargs",
           "execute_only_once", "humanize_time_delta"]


def humanize_time_delta(sec: float) -> str:
    """A duration in words: ``"1 day 9 hours 2 minutes 3 seconds"``, ``"0.01 seconds"``.

    Example:
        >>> humanize_time_delta(87.6)
        '1 minute 27 seconds'
    """
    if sec < 0:
        logger.warning(f"humanize_time_delta got a negative duration ({sec} s).")
        return f"{sec:.3g} seconds"
    if sec == 0:
        return "0 second"
    whole = int(sec)
    values = [whole // 86400, whole % 86400 // 3600, whole % 3600 // 60, whole % 60]
    if sec < 60:
        values[-1] = sec
    parts = [f"{v:.3g} {unit}{'s' if v > 1 else ''}"
             for v, unit in zip(values, ["day", "hour", "minute", "second"]) if v > 0]
    return " ".join(parts)


@contextlib.contextmanager
def change_env(name: str, val):
    """A context in which the environment variable ``name`` is ``val`` (None: unset); the old
    value comes back afterwards, also after an exception.

    Example:
        >>> with change_env("CUDA_VISIBLE_DEVICES", ""):
        ...     start_worker()            # sees no GPU
    """
    old = os.environ.get(name)
    if val is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(val)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


_EXECUTED = set()


def execute_only_once() -> bool:
    """True the first time the line that calls it runs, False every later time.

    Example:
        >>> if execute_only_once():
        ...     logger.warning("shown once, however often this line runs")
    """
    caller = inspect.currentframe().f_back
    key = (caller.f_code.co_filename, caller.f_lineno)
    if key in _EXECUTED:
        return False
    _EXECUTED.add(key)
    return True


def _refresh_interval(file):
    try:
        interactive = file.isatty()
    except (AttributeError, ValueError):
        interactive = False
    if interactive:
        return 0.5
    if "SLURM_JOB_ID" in os.environ:
        return 60 if int(os.environ.get("SLURM_JOB_NUM_NODES", 1)) > 1 else 15
    return 60 if "OMPI_COMM_WORLD_SIZE" in os.environ else 180


def get_tqdm_kwargs(**kwargs) -> dict:
    """tfloop's default ``tqdm`` options (ASCII bar, rate, refreshed every 0.5 s on a terminal
    and every few minutes in a log file, or every ``$TENSORPACK_PROGRESS_REFRESH`` seconds),
    updated with ``kwargs``.

    Example:
        >>> bar = tqdm.tqdm(total=100, **get_tqdm_kwargs(leave=False))
    """
    options = {"smoothing": 0.5, "dynamic_ncols": True, "ascii": True,
               "bar_format": "{l_bar}{bar}|{n_fmt}/{total_fmt}[{elapsed}<{remaining},"
                             "{rate_noinv_fmt}]"}
    refresh = os.environ.get("TENSORPACK_PROGRESS_REFRESH")
    options["mininterval"] = float(refresh) if refresh else _refresh_interval(
        kwargs.get("file", sys.stderr))
    options.update(kwargs)
    return options


def get_tqdm(*args, **kwargs):
    """``tqdm.tqdm(*args, **kwargs)`` with :func:`get_tqdm_kwargs`'s defaults.

    Example:
        >>> for x in get_tqdm(range(100)):
        ...     work(x)
    """
    return tqdm.tqdm(*args, **get_tqdm_kwargs(**kwargs))
