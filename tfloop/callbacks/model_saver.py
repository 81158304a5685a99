"""Model checkpoints at every trigger (ModelSaver)."""
import time

from tfloop.callbacks.background_write import BackgroundWriter
from tfloop.callbacks.base import Callback
from tfloop.callbacks.checkpoint_dir import SharedCheckpointDir
from tfloop.callbacks.checkpoint_io import (
    IO_ERRORS,
    describe_io_error,
    remove_unfinished_writes,
    resolve_checkpoint_dir,
)
from tfloop.callbacks.checkpoint_snapshot import VariableSnapshot, variables_bytes
from tfloop.compat import tf, tfv1
from tfloop.utils import files, logger
from tfloop.utils.checks import check_int, check_one_of, check_positive_number
from tfloop.utils.fs import display_path
from tfloop.utils.logdir_format import CHECKPOINT_PREFIX

__all__ = ["ModelSaver"]

_ON_ERROR = ("log", "raise")
# A checkpoint projection above this many bytes is a warning; below, an info line.
DISK_WARNING_BYTES = 2 ** 30
# The run length over which the checkpoints kept every n hours are projected.
PROJECTED_HOURS = 24
class ModelSaver(Callback):
    """Save the variables as a checkpoint ``<checkpoint_dir>/model-<global_step>`` at each trigger.

    Checkpoints are written by ``tf.compat.v1.train.Saver`` in the V2 format (``.index`` and
    ``.data-*`` files), which also keeps the ``checkpoint`` state file pointing at the latest one
    and deletes old ones beyond ``max_to_keep``. Checkpoints listed in an existing ``checkpoint``
    file count towards ``max_to_keep`` too. The meta graph is exported once per run, to
    ``graph-<global_step>.meta``, at the first save (a file of its own, so that deleting old
    checkpoints never deletes it). At the end of training one more checkpoint is saved when steps
    ran since the last one, unless training failed (e.g. a NaN loss): the latest checkpoint then
    stays the last good one. It is saved as the main loop ends, before any callback's
    ``after_train`` (the trainer's ``loop_end_listeners``), so it holds the weights of its step
    even when an ``after_train`` then loads others (``EarlyStopping(restore_best_weights=True)``).

    By default (``background=True``) a save stops training only for a snapshot of the variables
    (one session call that copies them into host buffers kept between saves: the host memory of
    one more copy of the saved variables) and the checkpoint is written in a background thread
    while training goes on. A
    checkpoint is listed in the ``checkpoint`` file, handed to ``MinSaver``/``MaxSaver`` and given
    its resume state only once its files are complete, so a crash or ``kill -9`` during a write
    leaves the earlier checkpoints as they were. One write runs at a time: a save that comes while
    the previous write is still running waits for it (logged once as a warning: save less often).
    ``after_train`` returns once the last write has finished, also when training failed or
    stopped on a signal. ``background=False`` writes in the training thread instead.

    In a local directory the background write puts a checkpoint's data into the data file of one
    that ``max_to_keep`` deleted, which costs less than a new file (``docs/performance.md``). While
    training runs, a hidden directory ``.model-slots`` beside the checkpoints holds such data
    files of deleted checkpoints (at most two) and the file being written; it is deleted when
    training ends. A tool that copies the log directory during training may leave it out.

    Several ModelSavers may write to one directory (tensorpack scripts keep a frequent one and a
    long-lived one there): each keeps the checkpoints it saved by its own ``max_to_keep`` and
    ``keep_checkpoint_every_n_hours``, a checkpoint is deleted only when none of them keeps it,
    two that save at one step share one checkpoint, and the ``checkpoint`` file lists every kept
    checkpoint with the newest as the latest (:mod:`tfloop.callbacks.checkpoint_dir`); they write
    one at a time, and a resumed run (``AutoResumeTrainConfig``) gives each back what it kept.

    A save that fails (disk full, directory not writable) is logged as an error naming the path, and
    training continues; ``on_error="raise"`` stops training instead (for a background write: at
    the next save, or at the end of training). The failed write's temporary files are deleted at
    once, so that on a full disk the next save has the space they held.

    At the start of training, when ``keep_checkpoint_every_n_hours`` keeps checkpoints besides the
    ``max_to_keep`` latest ones, the disk they take after a day of training is logged once: the
    bytes of the saved variables times ``max_to_keep + 24 / keep_checkpoint_every_n_hours``
    (a warning above 1 GiB, else a detail line in ``log.log``).

    Args:
        max_to_keep (int): how many recent checkpoints to keep; 0 or None keeps all.
        keep_checkpoint_every_n_hours (float): also keep one checkpoint every n hours.
        checkpoint_dir (str): where to save; the run's log directory (``trainer.logdir``) by
            default. A URL (``gs://bucket/run``) is written through TensorFlow's file layer.
        var_collections (str or list[str]): the graph collections whose variables are saved;
            ``GLOBAL_VARIABLES`` by default.
        on_error (str): ``"log"`` (log loudly, keep training) or ``"raise"`` when a save fails.
        background (bool): write checkpoints in a background thread (see above).

    Attributes:
        checkpoint_dir (str): the directory, resolved in ``setup_graph``.
        last_checkpoint (str): the prefix of the latest checkpoint written in this run, or None.

    Example:
        >>> callbacks = [ModelSaver(max_to_keep=5),                       # after every epoch
        ...              PeriodicTrigger(ModelSaver(checkpoint_dir="ckpt_steps"),
        ...                              every_k_steps=500)]
    """

    def __init__(self, max_to_keep=10, keep_checkpoint_every_n_hours=0.5, checkpoint_dir=None,
                 var_collections=None, on_error="log", background=True):
        check_int(max_to_keep, "ModelSaver: max_to_keep", at_least=0, allow_none=True,
                  note="0 or None keeps every checkpoint")
        check_positive_number(keep_checkpoint_every_n_hours,
                              "ModelSaver: keep_checkpoint_every_n_hours", unit="hours")
        if var_collections is None:
            var_collections = [tfv1.GraphKeys.GLOBAL_VARIABLES]
        elif isinstance(var_collections, str):
            var_collections = [var_collections]
        var_collections = list(var_collections)
        if not var_collections or not all(isinstance(c, str) for c in var_collections):
            raise ValueError("var_collections must be a collection name or a list of them, "
                             f"got {var_collections!r}.")
        check_one_of(on_error, "ModelSaver: on_error", _ON_ERROR)
        if not isinstance(background, bool):
            raise TypeError(f"ModelSaver: background must be True or False, got {background!r}.")
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._dir_arg = checkpoint_dir
        self._var_collections = var_collections
        self._on_error = on_error
        self.checkpoint_dir = None
        self.last_checkpoint = None
        self.saver = None
        self._saved = {}
        self._covered_step = 0
        self._meta_written = False
        self._background = background
        self._variables = []
        self._snapshot = None
        self._writer = BackgroundWriter("ModelSaver")
        self._write_error = None
        self._warned_wait = False
        self._shared = None

    def _setup_graph(self):
        self.checkpoint_dir = resolve_checkpoint_dir(self._dir_arg, self, self.trainer.logdir)
        for other in self.trainer.callbacks_of(ModelSaver):
            if other is self:
                break
            if other.checkpoint_dir == self.checkpoint_dir:
                self._share_directory_with(other)
                break
        variables = []
        for key in self._var_collections:
            variables.extend(v for v in self.graph.get_collection(key) if v not in variables)
        if not variables:
            raise ValueError("ModelSaver found no variables to save in the collections "
                             f"{self._var_collections}.")
        kwargs = dict(max_to_keep=self._max_to_keep,
                      keep_checkpoint_every_n_hours=self._keep_hours,
                      write_version=tfv1.train.SaverDef.V2, save_relative_paths=True)
        self._variables = variables
        self.saver = tfv1.train.Saver(var_list=variables, **kwargs)
        if self._background:
            shared_writer = None if self._shared is None else self._shared.in_place_writer
            self._snapshot = VariableSnapshot(variables, directory=self.checkpoint_dir,
                                              in_place_writer=shared_writer, **kwargs)
            if self._shared is not None and shared_writer is None:
                self._shared.in_place_writer = self._snapshot.in_place_writer
        self.trainer.loop_end_listeners.append(self._save_final)

    def _share_directory_with(self, other):
        """Keep checkpoints with ``other`` (listed before, same directory); one write at a time."""
        if other._shared is None:
            other._shared = SharedCheckpointDir(other.checkpoint_dir)
            other._shared.join(other, other._max_to_keep, other._keep_hours)
            if other._snapshot is not None:
                other._shared.in_place_writer = other._snapshot.in_place_writer
        self._shared, self._writer = other._shared, other._writer
        self._shared.join(self, self._max_to_keep, self._keep_hours)

    def _writing_saver(self):
        return self._snapshot.saver if self._background else self.saver

    def _before_train(self):
        self._covered_step = self.global_step
        self._report_disk_use()
        remove_unfinished_writes(self.checkpoint_dir)
        state = tfv1.train.get_checkpoint_state(self.checkpoint_dir)
        if state is not None:
            earlier = [p for p in state.all_model_checkpoint_paths if files.exists(p + ".index")]
            if earlier and self._shared is not None:
                self._shared.keep_earlier(earlier)
            elif earlier:
                self._writing_saver().recover_last_checkpoints(earlier)
                logger.info(f"ModelSaver: {len(earlier)} earlier checkpoint(s) in "
                            f"{self.checkpoint_dir} count towards max_to_keep.")

    def _report_disk_use(self):
        if not self._max_to_keep:
            return
        size = variables_bytes(self._variables)
        extra = int(PROJECTED_HOURS / self._keep_hours)
        if not size or not extra:
            return
        count = self._max_to_keep + extra
        log = logger.warning if size * count > DISK_WARNING_BYTES else logger.detail
        log(f"ModelSaver: besides the {self._max_to_keep} latest checkpoints it keeps one every "
            f"{self._keep_hours:g} h (keep_checkpoint_every_n_hours): after {PROJECTED_HOURS} h "
            f"of training, {count} checkpoints of {_human_bytes(size)} = "
            f"{_human_bytes(size * count)} in {display_path(self.checkpoint_dir)}. Raise "
            "keep_checkpoint_every_n_hours to keep fewer.")

    def _trigger(self):
        if self.global_step not in self._saved:
            self._save()

    def _save_final(self):
        """The checkpoint of the last step, when none was saved at it (training ended cleanly)."""
        self._writer.wait()     # a write under way covers its step once it has finished
        if self.global_step > self._covered_step:
            self._save()

    def _after_train(self):
        try:
            self._writer.wait()
            if self.trainer.training_error is not None:
                latest = self.last_checkpoint or "none from this run"
                logger.info(f"ModelSaver: training failed, so no final checkpoint; the latest one "
                            f"is {latest}.")
        finally:
            self._writer.wait()
            if self._snapshot is not None:
                self._snapshot.release()
        self._raise_write_error()

    def _save(self):
        step = self.global_step
        if self._shared is not None and self._shared.keep_if_written(self, step, self._prefix(step),
                                                                     self._kept):
            return
        if not self._background:
            self._record(step, *self._write(step))
            return
        self._wait_for_previous_write(step)
        self._raise_write_error()
        try:
            self._snapshot.take(self.trainer.sess)
        except tf.errors.OpError as e:
            self._record(step, None, e)
            return
        self._saved[step] = None        # being written: checkpoint_at waits for it

        def write():
            try:
                path, error = self._write(step)
            except Exception as e:      # not an IO error, but no less a lost checkpoint
                path, error = None, e
            self._record(step, path, error)
            if error is not None:
                raise error
        if self._shared is not None:
            self._shared.started(self, step, self._prefix(step))
        pending = self._writer.start(write)
        if self._shared is not None:
            self._shared.runs_in_background(step, pending)
        self.trainer.checkpoint_saved(self._prefix(step), pending)

    def _wait_for_previous_write(self, step):
        if not self._writer.busy:
            return
        start = time.perf_counter()
        self._writer.wait()
        if not self._warned_wait:
            self._warned_wait = True
            logger.warning(f"ModelSaver: at global step {step} the previous checkpoint was still "
                           f"being written; this save waited {time.perf_counter() - start:.2f} s "
                           "for it. Save less often to keep training from waiting.")

    def _prefix(self, step):
        return files.join(self.checkpoint_dir, f"{CHECKPOINT_PREFIX}-{step}")

    def _write(self, step):
        """Write the checkpoint of ``step``: ``(path, None)``, or ``(None, error)``."""
        sess = self.trainer.sess
        shared = self._shared
        if shared is not None and not self._background:
            shared.started(self, step, self._prefix(step))
        try:
            files.makedirs(self.checkpoint_dir)
            with self.graph.as_default():
                if not (self._meta_written or (shared is not None and shared.meta_written)):
                    self.saver.export_meta_graph(
                        files.join(self.checkpoint_dir, f"graph-{step}.meta"))
                    self._meta_written = True
                    if shared is not None:
                        shared.meta_written = True
                path = self._writing_saver().save(
                    sess, files.join(self.checkpoint_dir, CHECKPOINT_PREFIX), global_step=step,
                    write_meta_graph=False, write_state=shared is None)
            if shared is not None:
                shared.written(self, path)
        except IO_ERRORS as e:
            remove_unfinished_writes(self.checkpoint_dir, step)
            if shared is not None:
                shared.failed(step, self._prefix(step))
            return None, e
        return path, None

    def _kept(self, step, path):
        self._saved[step] = path
        self._covered_step = max(self._covered_step, step)
        self.last_checkpoint = path

    def _record(self, step, path, error):
        if error is None:
            self._kept(step, path)
            logger.detail(f"Model saved to {display_path(path)}.")
            if not self._background:
                self.trainer.checkpoint_saved(path)
            return
        self._saved.pop(step, None)
        message = (f"ModelSaver could not save checkpoint {self._prefix(step)} (global step "
                   f"{step}): {describe_io_error(error)}.")
        if self._on_error == "raise":
            self._write_error = OSError(message)
            self._write_error.__cause__ = error
            if not self._background:
                self._raise_write_error()
            return
        logger.error(f"{message} Training continues; the latest checkpoint is "
                     f"{self.last_checkpoint or 'none yet'}. Check the free space and "
                     f"permissions of {self.checkpoint_dir}.")

    def _raise_write_error(self):
        error, self._write_error = self._write_error, None
        if error is not None:
            raise error

    def _state_dict(self):
        """In a directory several savers share, the checkpoints this one keeps; else None."""
        return None if self._shared is None else self._shared.state_of(self)

    def _load_state_dict(self, state):
        if self._shared is not None and state is not None:
            self._shared.restore(self, state)

    def checkpoint_at(self, step):
        """The prefix of the checkpoint this saver wrote at global step ``step`` in this run, when
        its files are still on disk; else None. Waits for a write under way."""
        if step in self._saved:
            self._writer.wait()
        path = self._saved.get(step)
        if path is None or not files.exists(path + ".index"):
            return None
        return path


def _human_bytes(n):
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
