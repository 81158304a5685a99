"""A log directory written by hand, as a training run leaves it, for the CLI tests."""
import contextlib
import json

from tfloop.utils.dirlock import DirLock

RECORDS = [{"epoch_num": 1, "global_step": 3, "cost": 0.5, "val-error": 0.2, "val-accuracy": 0.8},
           {"epoch_num": 2, "global_step": 6, "cost": 0.25, "val-error": 0.1, "lr": 0.01,
            "val-accuracy": 0.9},
           {"epoch_num": 3, "global_step": 9, "cost": 0.3, "val-error": 0.15, "lr": 0.001,
            "val-accuracy": 0.85}]

LOG = """[1123 20:19:46 @logger.py:195] Argv: train.py --lr 0.1
[1123 20:19:46 @logger.py:196] Versions: tfloop 0.1.0, TensorFlow 2.21.0, Python 3.11.7
[1123 20:19:46 @logger.py:197] Log directory: train_log/run
[1123 20:21:51 @base.py:201] Training has finished.
"""


def make_logdir(path, records=RECORDS, log=LOG, checkpoints=(3, 6, 9)):
    path.mkdir(parents=True, exist_ok=True)
    (path / "stats.json").write_text(json.dumps(records))
    (path / "log.log").write_text(log)
    for step in checkpoints:
        (path / f"model-{step}.index").write_bytes(b"i" * 100)
        (path / f"model-{step}.data-00000-of-00001").write_bytes(b"d" * 2000)
    if checkpoints:
        last = checkpoints[-1]
        (path / f"model-{last}.resume.json").write_text(json.dumps(
            {"epoch": 4, "local_step": 0, "global_step": last}))
        (path / "min-val-error.index").write_bytes(b"i")
        (path / "min-val-error.json").write_text(json.dumps(
            {"stat": "val-error", "mode": "min", "checkpoints": [
                {"rank": 1, "checkpoint": "min-val-error", "global_step": 6, "value": 0.1}]}))
    return str(path)


@contextlib.contextmanager
def live_run(path):
    """The directory's lock held, as a live run holds it."""
    lock = DirLock(str(path))
    lock.acquire()
    try:
        yield
    finally:
        lock.release()
