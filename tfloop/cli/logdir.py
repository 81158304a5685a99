"""The ``tfloop`` command's view of a log directory: its files read through
:mod:`tfloop.utils.logdir_format`, with one-line reasons (``SystemExit``) for what cannot be read,
and which stats are better high, better low, or hyper-parameters that are not ranked.

Everything here reads files only, so that the ``tfloop`` command starts in a fraction of a second.
A log directory given as a URL (``gs://bucket/run``, ``ram://run``) is read through TensorFlow's
file layer (:mod:`tfloop.utils.files`), which is imported only then.
"""
import os
import re
from datetime import datetime

from tfloop.utils import files
from tfloop.utils import logdir_format as fmt
from tfloop.utils.logdir_format import STATS_FILE, stat_names

__all__ = ["STATS_FILE", "is_dir", "has_file", "load_records", "load_runs", "run_name",
           "list_checkpoints", "best_checkpoints", "resume_point", "read_log", "run_status",
           "stat_names", "is_maximized", "stat_mode", "hyper_params", "best_record", "PARAM"]

PARAM = "param"     # the mode of a hyper-parameter: shown, never ranked
_LOG_LINE = re.compile(r"^\[(\d{4} \d\d:\d\d:\d\d) @[^\]]*\] (.*)$")
_MAXIMIZED = re.compile(r"acc|precision|recall|f1|auc|iou|map\b|score|reward|psnr|ssim|throughput",
                        re.I)
# Log directories from before status.json listed its hyper-parameters: judged by the name.
_HYPER_PARAM = re.compile(r"^(learning_rate|lr|momentum|weight_decay|wd|beta\d?|epsilon|"
                          r"dropout|keep_prob|temperature)(_\d+)?$", re.I)


def is_dir(logdir):
    """Whether ``logdir`` is a directory; SystemExit for a URL whose scheme TensorFlow does not
    know (naming the plugin to install)."""
    try:
        return files.isdir(logdir)
    except files.UnknownSchemeError as e:
        raise SystemExit(str(e)) from None


def has_file(logdir, name):
    """Whether ``<logdir>/<name>`` is a file."""
    return files.isfile(files.join(logdir, name))


def _check_dir(logdir):
    if not is_dir(logdir):
        raise SystemExit(f"{logdir} is not a directory: give a tfloop log directory "
                         f"(the one passed to logger.set_logger_dir).")


def load_records(logdir):
    """The records of ``<logdir>/stats.json``; SystemExit with a one-line reason when unreadable."""
    _check_dir(logdir)
    path = files.join(logdir, STATS_FILE)
    if not files.isfile(path):
        raise SystemExit(f"No stats.json in {logdir}: is it a tfloop log directory with a "
                         f"JSONWriter (one of the default monitors)? The run is "
                         f"{fmt.read_run_status(logdir).describe()}.")
    try:
        return fmt.read_stats(logdir)
    except (ValueError, OSError) as e:
        raise SystemExit(f"Cannot read {path}: {e}.") from None


def run_name(logdir):
    """A short name for a run: its directory's name."""
    if files.is_url(logdir):
        return files.basename(logdir) or logdir
    return os.path.basename(os.path.normpath(logdir)) or logdir


def load_runs(logdirs):
    """``[(name, records)]`` of several log directories: each named by its directory's name, or
    by its path when two share a name."""
    runs = [(run_name(d), load_records(d)) for d in logdirs]
    if len({name for name, _ in runs}) < len(runs):
        runs = [(d, records) for d, (_, records) in zip(logdirs, runs)]
    return runs


def run_status(logdir):
    """The run's :class:`~tfloop.utils.logdir_format.RunStatus` (died included)."""
    _check_dir(logdir)
    return fmt.read_run_status(logdir)


def hyper_params(logdir):
    """The names of the hyper-parameters the run's setters recorded in ``status.json``, or None
    when it does not say (older runs, or a run still going)."""
    names = fmt.read_run_status(logdir).record.get("hyper_params")
    return set(names) if isinstance(names, list) else None


def is_maximized(name):
    """Whether larger is better for a stat, judged by its name (accuracy, f1, ...)."""
    return bool(_MAXIMIZED.search(name))


def stat_mode(name, params=None):
    """``"max"``, ``"min"`` or :data:`PARAM` (a hyper-parameter: ``name`` is in ``params``, or,
    when ``params`` is None, named like one: ``learning_rate``, ``momentum``, ...)."""
    if (name in params) if params is not None else bool(_HYPER_PARAM.match(name)):
        return PARAM
    return "max" if is_maximized(name) else "min"


def best_record(records, name, params=None):
    """``(record, mode)``: the record holding the best finite value of ``name``; None as the
    record for a hyper-parameter or a stat without numbers."""
    mode = stat_mode(name, params)
    candidates = [r for r in records if isinstance(r.get(name), (int, float))
                  and r[name] == r[name] and abs(r[name]) != float("inf")]
    if not candidates or mode == PARAM:
        return None, mode
    pick = max if mode == "max" else min
    return pick(candidates, key=lambda r: r[name]), mode


def list_checkpoints(logdir):
    """The checkpoints of ``logdir``, oldest first (see
    :func:`tfloop.utils.logdir_format.list_checkpoints`)."""
    _check_dir(logdir)
    return fmt.list_checkpoints(logdir)


def best_checkpoints(logdir):
    """The checkpoints kept by ``MinSaver``/``MaxSaver``: one dict per kept checkpoint with
    ``stat``, ``mode``, ``rank``, ``checkpoint``, ``global_step``, ``value``."""
    _check_dir(logdir)
    return [dict(entry, stat=record.get("stat"), mode=record.get("mode"))
            for record in fmt.best_checkpoint_records(logdir)
            for entry in record["checkpoints"] if isinstance(entry, dict)]


def resume_point(logdir):
    """The newest resume state as a dict with its ``checkpoint``, or None."""
    _check_dir(logdir)
    return fmt.newest_resume_state(logdir)


def _parse_time(stamp, year):
    return datetime.strptime(f"{year}{stamp}", "%Y%m%d %H:%M:%S")


def read_log(logdir):
    """What ``log.log`` says about the latest run: ``argv``, ``versions``, ``start``/``end``
    (datetimes of its first and last line), or an empty dict without a log file."""
    path = files.join(logdir, fmt.LOG_FILE)
    if not files.isfile(path):
        return {}
    info = {}
    mtime = files.mtime(path)       # 0 where the filesystem keeps none (ram://)
    year = datetime.fromtimestamp(mtime).year if mtime else datetime.now().year
    for line in files.read_text(path, errors="replace").splitlines():
        match = _LOG_LINE.match(line)
        if match is None:
            continue
        stamp, message = match.groups()
        when = _parse_time(stamp, year)
        info.setdefault("start", when)
        info["end"] = when
        if message.startswith("Argv: "):
            info["argv"] = message[len("Argv: "):]
        elif message.startswith("Versions: "):
            info["versions"] = message[len("Versions: "):]
    return info
