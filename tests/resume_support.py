"""A deterministic training run for the resume and fault tests, in-process or as a subprocess.

As a script: ``python resume_support.py LOGDIR OUTDIR [BLOCK [MAX_EPOCH]]`` trains (resuming from
LOGDIR) and writes ``OUTDIR/final.npy`` at the end. ``BLOCK`` names a point where the process writes
``OUTDIR/blocked`` and then hangs, for the test to kill it there (see :func:`install_block`).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from support import LinearModel, make_regression_data  # noqa: E402

import tfloop  # noqa: E402
from tfloop.compat import tf, tfv1  # noqa: E402
from tfloop.utils import logger  # noqa: E402

STEPS_PER_EPOCH = 3


def make_dataset():
    """12 datapoints, shuffled with a seed (a new order each pass), batches of 4."""
    x, y = make_regression_data(12)
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(12, seed=7).batch(4)


class WeightLog(tfloop.Callback):
    """Records ``w`` after every step (fetched with the step) and puts its sum every epoch."""

    _chief_only = False

    def __init__(self):
        self.after_step = []
        self.final = None

    def _setup_graph(self):
        self.w = next(v for v in tfv1.global_variables() if v.op.name == "w")
        # Read after the update: a plain read in the step's run could happen before or after it.
        with tf.control_dependencies([self.trainer.train_op]):
            self.w_after_step = tf.identity(self.w.read_value())

    def _before_run(self, ctx):
        return [self.w_after_step]

    def _after_run(self, ctx, values):
        self.after_step.append((self.global_step, values.results[0].tobytes()))

    def _trigger(self):
        self.trainer.monitors.put_scalar("w_sum", float(self.trainer.sess.run(self.w).sum()))

    def _after_train(self):
        self.final = self.trainer.sess.run(self.w)


class StepCounter(tfloop.Callback):
    """Counts the steps of every run so far (its state is saved with the checkpoints)."""

    _chief_only = False

    def __init__(self):
        self.steps = 0
        self.at_start = None

    def _before_train(self):
        self.at_start = self.steps

    def _trigger_step(self):
        self.steps += 1

    def _state_dict(self):
        return {"steps": self.steps}

    def _load_state_dict(self, state):
        self.steps = state["steps"]


class StopAt(tfloop.Callback):
    def __init__(self, step):
        self.step = step

    def _trigger_step(self):
        if self.global_step == self.step:
            raise tfloop.StopTraining(f"test stop at {self.step}")


def train(logdir, max_epoch=4, save_every=2, extra=(), max_to_keep=None, make_data=make_dataset,
          trainer=None):
    """Train (resuming from ``logdir``) and return ``(config, weight_log, counter)``."""
    logger.set_logger_dir(logdir, action="keep")
    weights, counter = WeightLog(), StepCounter()
    callbacks = [tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=max_to_keep),
                                        every_k_steps=save_every), weights, counter] + list(extra)
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(make_data), callbacks=callbacks,
        monitors=[tfloop.JSONWriter()], extra_callbacks=[], max_epoch=max_epoch)
    try:
        tfloop.launch_train_with_config(config, trainer or tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    return config, weights, counter


def train_resumable(logdir, data, stop_at=None, max_epoch=3, steps_per_epoch=STEPS_PER_EPOCH):
    """Train LinearModel on ``data`` (3 steps per epoch; None: one pass of the data per epoch)
    with AutoResumeTrainConfig, a checkpoint every 2 steps, stopping after global step
    ``stop_at``; return ``(config, {global step: w after that step, as bytes})``."""
    logger.set_logger_dir(logdir, action="keep")
    weights = WeightLog()
    callbacks = [tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=2), weights]
    if stop_at:
        callbacks.append(StopAt(stop_at))
    config = tfloop.AutoResumeTrainConfig(model=LinearModel(), data=data, callbacks=callbacks,
                                          monitors=[], extra_callbacks=[],
                                          steps_per_epoch=steps_per_epoch, max_epoch=max_epoch)
    try:
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        logger.unset_logger_dir()
    return config, dict(weights.after_step)


def read_stats(logdir):
    with open(os.path.join(logdir, "stats.json")) as f:
        return json.load(f)


# ---- the subprocess worker ----------------------------------------------------------------------
class _Block(tfloop.Callback):
    """Hangs in ``hook`` at global step ``step`` (or every step sleeps ``pause`` seconds)."""

    def __init__(self, marker, step=None, hook="_trigger_step", pause=0.0):
        self.marker, self.step, self.pause = marker, step, pause
        setattr(self, hook, self._maybe_block)

    def _maybe_block(self):
        if self.pause:
            time.sleep(self.pause)
        if self.step is not None and self.global_step == self.step:
            hang(self.marker)


def hang(marker, note=""):
    with open(marker, "w") as f:
        f.write(note)
    while True:
        time.sleep(60)


def _half_then_hang(marker, data, f):
    f.write(data[:len(data) // 2])
    f.flush()
    hang(marker)


def install_block(spec, marker):
    """Make the process hang at ``spec`` = ``point:arg``; returns extra callbacks to add.

    Points: ``step:N`` (a callback's trigger_step at step N), ``epoch:E`` (trigger_epoch of epoch E,
    after ModelSaver, before the monitors), ``state_file:N`` (checkpoint N complete, the
    ``checkpoint`` state file not yet updated), ``iterator:N`` / ``resume_json:N`` (half of that
    file of checkpoint N written), ``stats:K`` (stats.json's K-th record made, not yet written),
    ``meta`` (while exporting the meta graph), ``write:N`` (ModelSaver's background write of
    checkpoint N under way), ``restore`` (after the variables were restored),
    ``slow:SECONDS`` (sleep in every step; the test kills at a random moment), ``signal:N``
    (``OUTDIR/blocked`` appears at step N, which then waits for the test's signal).
    """
    point, _, arg = spec.partition(":")
    if not point:
        return []
    if point not in _BLOCKS:
        raise ValueError(f"unknown block point {spec!r}")
    return _BLOCKS[point](marker, arg)


def _block_at_step(marker, arg):
    return [_Block(marker, int(arg))]


def _block_at_epoch(marker, arg):
    return [_Block(marker, int(arg) * STEPS_PER_EPOCH, hook="_trigger")]


def _block_slow(marker, arg):
    started = tfloop.CallbackFactory(before_train=lambda self: open(marker, "w").close())
    return [started, _Block(marker, pause=float(arg))]


def _block_for_signal(marker, arg):
    class Mark(tfloop.Callback):
        def _trigger_step(self):
            if self.global_step == int(arg):
                open(marker, "w").close()
                deadline = time.monotonic() + 120
                while not self.trainer.stop_requested and \
                        time.monotonic() < deadline:
                    time.sleep(0.01)

        def _after_train(self):
            open(os.path.join(os.path.dirname(marker), "after_train"), "w").close()
    return [Mark()]


def _block_state_file(marker, arg):
    from tensorflow.python.checkpoint import checkpoint_management
    from tensorflow.python.training import saver as saver_module

    original = saver_module.checkpoint_management.update_checkpoint_state_internal

    def update(save_dir, model_checkpoint_path, *args, **kwargs):
        if model_checkpoint_path.endswith("model-" + arg):
            hang(marker)
        return original(save_dir, model_checkpoint_path, *args, **kwargs)
    saver_module.checkpoint_management.update_checkpoint_state_internal = update
    checkpoint_management.update_checkpoint_state_internal = update
    return []


def _block_resume_file(suffix):
    def install(marker, arg):
        import tfloop.resume.saver as state_module

        original_write = state_module.atomic_write

        def write(path, data):
            if path.endswith("model-" + arg + suffix):
                tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".x.tmp")
                with open(tmp, "wb") as f:
                    _half_then_hang(marker, data.encode() if isinstance(data, str) else data, f)
            return original_write(path, data)
        state_module.atomic_write = write
        return []
    return install


def _block_stats(marker, arg):
    from tfloop.monitors.records import RecordMonitor
    original_write = RecordMonitor._write

    def write(self, new=None):
        if isinstance(self, tfloop.JSONWriter) and len(self.records) == int(arg):
            hang(marker)
        return original_write(self, new)
    RecordMonitor._write = write
    return []


def _block_write(marker, arg):
    """ModelSaver's background write of checkpoint N: half its tensors written into its data file
    (a slot beside the checkpoints, where the in-place writer writes it), then the writing thread
    hangs; training goes on."""
    import tfloop.callbacks.checkpoint_inplace as inplace

    write, write_data = inplace.InPlaceWriter.write, inplace.write_data
    writing = {}

    def held_write(self, names, prefix, *arrays):
        writing["held"] = prefix.decode().endswith(f"model-{arg}")
        return write(self, names, prefix, *arrays)

    def held_data(fd, arrays):
        if writing.get("held"):
            write_data(fd, arrays[:max(1, len(arrays) // 2)])
            hang(marker, f"writing model-{arg}")
        return write_data(fd, arrays)
    inplace.InPlaceWriter.write = held_write
    inplace.write_data = held_data
    return []


def _block_meta(marker, arg):
    from tensorflow.python.training import saver as saver_module

    def export(self, filename=None, **kwargs):
        with open(filename, "w") as f:
            _half_then_hang(marker, "x" * 100, f)
    saver_module.Saver.export_meta_graph = export
    return []


def _block_restore(marker, arg):
    import tfloop.resume.session_init as resume_module

    original_init = resume_module.ResumeInit._run_init

    def run_init(self, sess):
        self._restore.init(sess)
        hang(marker)
        return original_init(self, sess)
    resume_module.ResumeInit._run_init = run_init
    return []


_BLOCKS = {"step": _block_at_step, "epoch": _block_at_epoch, "slow": _block_slow,
           "signal": _block_for_signal, "state_file": _block_state_file,
           "iterator": _block_resume_file(".iterator"),
           "resume_json": _block_resume_file(".resume.json"), "stats": _block_stats,
           "meta": _block_meta, "restore": _block_restore, "write": _block_write}


def worker(argv):
    """:func:`main` in a forked process, its output going to ``OUTDIR/output.txt``."""
    out = os.open(os.path.join(argv[2], "output.txt"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(out, 1)
    os.dup2(out, 2)
    main(argv)


def main(argv):
    logdir, outdir = argv[1], argv[2]
    spec = argv[3] if len(argv) > 3 else ""
    max_epoch = int(argv[4] if len(argv) > 4 else os.environ.get("RESUME_TEST_MAX_EPOCH", "6"))
    save_every = int(os.environ.get("RESUME_TEST_SAVE_EVERY", "1"))
    extra = install_block(spec, os.path.join(outdir, "blocked"))
    _, weights, _ = train(logdir, max_epoch=max_epoch, save_every=save_every, extra=extra,
                          max_to_keep=3)
    np.save(os.path.join(outdir, "final.npy"), weights.final)


if __name__ == "__main__":
    main(sys.argv)
