"""The file in the log directory that names an experiment tracker's run, so a resumed training
logs into the same run."""
import json

from tfloop.utils import files, logger
from tfloop.utils.fs import atomic_write

__all__ = ["read_run_file", "write_run_file"]


def read_run_file(logdir, filename):
    """The dict stored in ``<logdir>/<filename>``, or None when there is none (or it is unreadable,
    with a warning).

    Example:
        >>> read_run_file("train_log/mnist", "mlflow_run.json")
        {'run_id': '5e1f...', 'tracking_uri': 'sqlite:///mlflow.db'}
    """
    if logdir is None:
        return None
    path = files.join(logdir, filename)
    if not files.isfile(path):
        return None
    try:
        stored = json.loads(files.read_text(path))
    except (OSError, ValueError) as e:
        logger.warning(f"Cannot read {path} ({e}): a new run is started instead of the one it "
                       "named.")
        return None
    return stored if isinstance(stored, dict) else None


def write_run_file(logdir, filename, content):
    """Store the dict ``content`` in ``<logdir>/<filename>`` (atomically); nothing without a log
    directory."""
    if logdir is None:
        return
    atomic_write(files.join(logdir, filename),
                 lambda f: json.dump(content, f, indent=1, sort_keys=True))
