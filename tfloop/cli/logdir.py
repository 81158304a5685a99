"""Reading a log directory without TensorFlow: stats, checkpoints, resume points and the log file.

Everything here reads files only, so that the ``tfloop`` command starts in a fraction of a second.
"""
import glob
import json
import os
import re
from datetime import datetime

from tfloop.utils.fs import read_json_records

__all__ = ["STATS_FILE", "load_records", "load_runs", "run_name", "list_checkpoints", "best_checkpoints",
           "resume_point", "read_log", "stat_names", "is_maximized", "best_record"]

STATS_FILE = "stats.json"
LOG_FILE = "log.log"
RESUME_SUFFIX = ".resume.json"
_STEP = re.compile(r"-(\d+)$")
_LOG_LINE = re.compile(r"^\[(\d{4} \d\d:\d\d:\d\d) @[^\]]*\] (.*)$")
_MAXIMIZED = re.compile(r"acc|precision|recall|f1|auc|iou|map\b|score|reward|psnr|ssim|throughput",
                        re.I)
_POSITION = ("epoch_num", "global_step")


def _check_dir(logdir):
    if not os.path.isdir(logdir):
        raise SystemExit(f"{logdir} is not a directory: give a tfloop log directory "
                         f"(the one passed to logger.set_logger_dir).")


def load_records(logdir):
    """The records of ``<logdir>/stats.json``; SystemExit with a one-line reason when unreadable."""
    _check_dir(logdir)
    path = os.path.join(logdir, STATS_FILE)
    if not os.path.isfile(path):
        raise SystemExit(f"No stats.json in {logdir}: is it a tfloop log directory with a "
                         f"JSONWriter (one of the default monitors)?")
    try:
        return read_json_records(path)
    except (ValueError, OSError) as e:
        raise SystemExit(f"Cannot read {path}: {e}.") from None


def run_name(logdir):
    """A short name for a run: its directory's name."""
    return os.path.basename(os.path.normpath(logdir)) or logdir


def load_runs(logdirs):
    """``[(name, records)]`` of several log directories: each named by its directory's name, or
    by its path when two share a name."""
    runs = [(run_name(d), load_records(d)) for d in logdirs]
    if len({name for name, _ in runs}) < len(runs):
        runs = [(d, records) for d, (_, records) in zip(logdirs, runs)]
    return runs


def stat_names(records):
    """Every scalar name in ``records`` except the position fields, sorted."""
    names = set()
    for record in records:
        names.update(record)
    return sorted(names - set(_POSITION))


def is_maximized(name):
    """Whether larger is better for a stat, judged by its name (accuracy, f1, ...)."""
    return bool(_MAXIMIZED.search(name))


def best_record(records, name):
    """``(record, "min" | "max")``: the record holding the best finite value of ``name``."""
    mode = "max" if is_maximized(name) else "min"
    candidates = [r for r in records if isinstance(r.get(name), (int, float))
                  and r[name] == r[name] and abs(r[name]) != float("inf")]
    if not candidates:
        return None, mode
    pick = max if mode == "max" else min
    return pick(candidates, key=lambda r: r[name]), mode


def _files_size(prefix):
    return sum(os.path.getsize(p) for p in glob.glob(glob.escape(prefix) + ".*")
               if not p.endswith((RESUME_SUFFIX, ".json")))


def list_checkpoints(logdir):
    """Checkpoints ``model-<step>`` (or any ``<name>-<step>``) with an index file, oldest first.

    Returns:
        list[dict]: ``name``, ``step``, ``bytes``, ``time`` (modification time) and ``resumable``
        (a resume state was saved with it).
    """
    _check_dir(logdir)
    found = []
    for index in glob.glob(os.path.join(glob.escape(logdir), "*.index")):
        prefix = index[:-len(".index")]
        name = os.path.basename(prefix)
        step = _STEP.search(name)
        if step is None or name.startswith(("min-", "max-")):
            continue
        found.append({"name": name, "step": int(step.group(1)), "bytes": _files_size(prefix),
                      "time": os.path.getmtime(index),
                      "resumable": os.path.isfile(prefix + RESUME_SUFFIX)})
    return sorted(found, key=lambda c: (c["step"], c["name"]))


def best_checkpoints(logdir):
    """The checkpoints kept by ``MinSaver``/``MaxSaver``: one dict per kept checkpoint with
    ``stat``, ``mode``, ``rank``, ``checkpoint``, ``global_step``, ``value``."""
    _check_dir(logdir)
    kept = []
    for path in sorted(glob.glob(os.path.join(glob.escape(logdir), "*.json"))):
        if os.path.basename(path) == STATS_FILE or path.endswith(RESUME_SUFFIX):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or not isinstance(record.get("checkpoints"), list):
            continue
        for entry in record["checkpoints"]:
            if isinstance(entry, dict):
                kept.append(dict(entry, stat=record.get("stat"), mode=record.get("mode")))
    return kept


def resume_point(logdir):
    """The newest resume state (``model-<step>.resume.json``) as a dict with its ``checkpoint``,
    or None when the directory has none."""
    _check_dir(logdir)
    states = []
    for path in glob.glob(os.path.join(glob.escape(logdir), "*" + RESUME_SUFFIX)):
        try:
            with open(path, encoding="utf-8") as f:
                state = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(state, dict) and isinstance(state.get("global_step"), int):
            states.append(dict(state, checkpoint=os.path.basename(path)[:-len(RESUME_SUFFIX)]))
    return max(states, key=lambda s: s["global_step"]) if states else None


def _parse_time(stamp, year):
    return datetime.strptime(f"{year}{stamp}", "%Y%m%d %H:%M:%S")


def read_log(logdir):
    """What ``log.log`` says about the run: ``argv``, ``versions``, ``start``/``end`` (datetimes of
    the first and last line), ``status`` (the line saying how the latest run ended, absent while
    it runs), or an empty dict without a log file."""
    path = os.path.join(logdir, LOG_FILE)
    if not os.path.isfile(path):
        return {}
    info = {}
    year = datetime.fromtimestamp(os.path.getmtime(path)).year
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            match = _LOG_LINE.match(line.rstrip("\n"))
            if match is None:
                continue
            stamp, message = match.groups()
            when = _parse_time(stamp, year)
            info.setdefault("start", when)
            info["end"] = when
            if message.startswith("Argv: "):
                info["argv"] = message[len("Argv: "):]
                info.pop("status", None)
            elif message.startswith("Versions: "):
                info["versions"] = message[len("Versions: "):]
            elif message.startswith(("Training has finished", "Training stopped", "Ctrl-C",
                                     "Training failed")):
                info["status"] = message
    return info
