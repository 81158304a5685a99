"""Checkpoints: the model at every trigger (ModelSaver) and the best ones by a stat (MinSaver)."""
import contextlib
import json
import math
import os
import shutil
import uuid

from tfloop.callbacks.base import Callback, ProxyCallback
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.compat import tf, tfv1
from tfloop.utils import logger

__all__ = ["ModelSaver", "MinSaver", "MaxSaver"]

_ON_ERROR = ("log", "raise")
# What a failed checkpoint write raises: Python file operations, or TF's file system via the op.
_IO_ERRORS = (OSError, tf.errors.OpError)


def _resolve_dir(checkpoint_dir, who):
    """The absolute checkpoint directory (``checkpoint_dir`` or the log directory), created."""
    if checkpoint_dir is None:
        checkpoint_dir = logger.get_logger_dir()
        if checkpoint_dir is None:
            raise ValueError(
                f"{who} has no directory to write to: pass checkpoint_dir=... or set a log directory "
                "first with tfloop.logger.set_logger_dir(...).")
    checkpoint_dir = os.path.abspath(os.fspath(checkpoint_dir))
    try:
        os.makedirs(checkpoint_dir, exist_ok=True)
    except OSError as e:
        raise OSError(f"{who} cannot create its checkpoint directory {checkpoint_dir}: {e.strerror or e}. Choose a directory you "
                      "can write to.") from None
    return checkpoint_dir


def _describe_error(e):
    """One line for an IO error: TF's own message without its graph traceback."""
    if isinstance(e, tf.errors.OpError):
        lines = [line.strip() for line in (e.message or "").splitlines()]
        for i, line in enumerate(lines):
            if line.startswith("Node: ") and i + 1 < len(lines) and lines[i + 1]:
                return f"{type(e).__name__}: {lines[i + 1]}"
        return "{}: {}".format(type(e).__name__, next((line for line in lines if line), ""))
    return f"{type(e).__name__}: {e}"


def _checkpoint_files(prefix):
    """The files of the V2 checkpoint ``prefix``, as {suffix: path}: ``.index`` and ``.data-*``."""
    dirname, base = os.path.split(prefix)
    try:
        names = os.listdir(dirname)
    except FileNotFoundError:
        return {}
    return {name[len(base):]: os.path.join(dirname, name) for name in names
            if name == base + ".index" or name.startswith(base + ".data-")}


def _install_order(suffix):
    return suffix == ".index"       # data files first, the index last


def _unwrap(cb):
    while isinstance(cb, ProxyCallback):
        cb = cb.cb
    return cb


class ModelSaver(Callback):
    """Save the variables as a checkpoint ``<checkpoint_dir>/model-<global_step>`` at each trigger.

    Checkpoints are written by ``tf.compat.v1.train.Saver`` in the V2 format (``.index`` and
    ``.data-*`` files), which also keeps the ``checkpoint`` state file pointing at the latest one
    and deletes old ones beyond ``max_to_keep``. Checkpoints listed in an existing ``checkpoint``
    file count towards ``max_to_keep`` too. The meta graph is exported once per run, to
    ``graph-<global_step>.meta``, at the first save (a file of its own, so that deleting old
    checkpoints never deletes it). At the end of training one more checkpoint is saved when steps
    ran since the last one, unless training failed (e.g. a NaN loss): the latest checkpoint then
    stays the last good one.

    A save that fails (disk full, directory not writable) is logged as an error naming the path, and
    training continues; ``on_error="raise"`` stops training instead.

    Args:
        max_to_keep (int): how many recent checkpoints to keep; 0 or None keeps all.
        keep_checkpoint_every_n_hours (float): also keep one checkpoint every n hours.
        checkpoint_dir (str): where to save; the log directory by default.
        var_collections (str or list[str]): the graph collections whose variables are saved;
            ``GLOBAL_VARIABLES`` by default.
        on_error (str): ``"log"`` (log loudly, keep training) or ``"raise"`` when a save fails.

    Attributes:
        checkpoint_dir (str): the directory, resolved in ``setup_graph``.
        last_checkpoint (str): the prefix of the latest checkpoint saved in this run, or None.

    Example:
        >>> callbacks = [ModelSaver(max_to_keep=5),                       # after every epoch
        ...              PeriodicTrigger(ModelSaver(checkpoint_dir="ckpt_steps"),
        ...                              every_k_steps=500)]
    """

    def __init__(self, max_to_keep=10, keep_checkpoint_every_n_hours=0.5, checkpoint_dir=None,
                 var_collections=None, on_error="log"):
        if max_to_keep is not None and (isinstance(max_to_keep, bool)
                                        or not isinstance(max_to_keep, int) or max_to_keep < 0):
            raise ValueError("max_to_keep must be an int >= 0 (0 or None keeps every checkpoint), "
                             f"got {max_to_keep!r}.")
        if isinstance(keep_checkpoint_every_n_hours, bool) or \
                not isinstance(keep_checkpoint_every_n_hours, (int, float)) or \
                keep_checkpoint_every_n_hours <= 0:
            raise ValueError(f"keep_checkpoint_every_n_hours must be a positive number, got {keep_checkpoint_every_n_hours!r}."
                             )
        if var_collections is None:
            var_collections = [tfv1.GraphKeys.GLOBAL_VARIABLES]
        elif isinstance(var_collections, str):
            var_collections = [var_collections]
        var_collections = list(var_collections)
        if not var_collections or not all(isinstance(c, str) for c in var_collections):
            raise ValueError("var_collections must be a collection name or a list of them, "
                             f"got {var_collections!r}.")
        if on_error not in _ON_ERROR:
            raise ValueError(f"on_error must be 'log' or 'raise', got {on_error!r}.")
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

    def _setup_graph(self):
        self.checkpoint_dir = _resolve_dir(self._dir_arg, self)
        for other in map(_unwrap, self.trainer.callbacks):
            if other is self:
                break
            if isinstance(other, ModelSaver) and other.checkpoint_dir == self.checkpoint_dir:
                raise ValueError(
                    f"Two ModelSavers write to {self.checkpoint_dir}: they would overwrite each other's 'checkpoint' "
                    "file and delete each other's checkpoints. Give one of them a checkpoint_dir= "
                    "of its own.")
        variables = []
        for key in self._var_collections:
            variables.extend(v for v in self.graph.get_collection(key) if v not in variables)
        if not variables:
            raise ValueError(f"ModelSaver found no variables to save in the collections {self._var_collections}.")
        self.saver = tfv1.train.Saver(
            var_list=variables, max_to_keep=self._max_to_keep,
            keep_checkpoint_every_n_hours=self._keep_hours,
            write_version=tfv1.train.SaverDef.V2, save_relative_paths=True)

    def _before_train(self):
        self._covered_step = self.global_step
        state = tfv1.train.get_checkpoint_state(self.checkpoint_dir)
        if state is not None:
            earlier = [p for p in state.all_model_checkpoint_paths if os.path.exists(p + ".index")]
            if earlier:
                self.saver.recover_last_checkpoints(earlier)
                logger.info(f"ModelSaver: {len(earlier)} earlier checkpoint(s) in {self.checkpoint_dir} count towards max_to_keep."
                            )

    def _trigger(self):
        if self.global_step not in self._saved:
            self._save()

    def _after_train(self):
        if self.trainer.training_error is not None:
            logger.info("ModelSaver: training failed, so no final checkpoint; the latest one is {}."
                        .format(self.last_checkpoint or "none from this run"))
            return
        if self.global_step > self._covered_step:
            self._save()

    def _save(self):
        step = self.global_step
        prefix = os.path.join(self.checkpoint_dir, f"model-{step}")
        try:
            os.makedirs(self.checkpoint_dir, exist_ok=True)
            with self.graph.as_default():
                if not self._meta_written:
                    self.saver.export_meta_graph(
                        os.path.join(self.checkpoint_dir, f"graph-{step}.meta"))
                    self._meta_written = True
                path = self.saver.save(self.trainer.sess,
                                       os.path.join(self.checkpoint_dir, "model"),
                                       global_step=step, write_meta_graph=False)
        except _IO_ERRORS as e:
            message = f"ModelSaver could not save checkpoint {prefix} (global step {step}): {_describe_error(e)}."
            if self._on_error == "raise":
                raise OSError(message) from e
            logger.error("{} Training continues; the latest checkpoint is {}. Check the free space "
                         "and permissions of {}.".format(
                             message, self.last_checkpoint or "none yet", self.checkpoint_dir))
            return
        self._saved[step] = path
        self._covered_step = step
        self.last_checkpoint = path
        logger.info(f"Model saved to {path}.")

    def checkpoint_at(self, step):
        """The prefix of the checkpoint this saver wrote at global step ``step`` in this run, when
        its files are still on disk; else None."""
        path = self._saved.get(step)
        if path is None or not os.path.exists(path + ".index"):
            return None
        return path


class MinSaver(StatMonitorCallback):
    """Keep a copy of the checkpoint of the step where a monitored stat was at its minimum.

    Whenever a new value of ``monitor_stat`` is the best so far, the checkpoint of the global step
    it was put at is kept as ``<checkpoint_dir>/min-<stat>`` (files ``.index`` and ``.data-*``;
    ``/`` in the stat name becomes ``_``), and ``min-<stat>.json`` records its step and value. The
    checkpoint is copied from a ``ModelSaver`` that saved that step; when none did yet (e.g.
    MinSaver is listed before ModelSaver), MinSaver saves the current weights itself, which are the
    weights of that step. Values are looked for at each trigger, right before each epoch and at the
    end of training, so a value put later in the same trigger round (by an ``InferenceRunner``
    listed after MinSaver) is kept before any further training step. Files are written under
    temporary names and moved into place with ``os.replace``.

    With ``top_k=k > 1`` the k best are kept, ranked: ``min-<stat>-1`` (best) to ``min-<stat>-k``,
    and the JSON file lists all of them. A best value whose weights can no longer be found (put at
    an earlier step that no ModelSaver kept) is logged as an error, not kept.

    Args:
        monitor_stat (str): the stat's name, e.g. ``"val-error-top1"``.
        reverse (bool): keep the maximum instead (see :class:`MaxSaver`).
        filename (str): the name of the kept checkpoint; ``min-<stat>`` (or ``max-<stat>``).
        checkpoint_dir (str): where to keep it; the log directory by default.
        top_k (int): how many of the best to keep.

    Attributes:
        top (list[tuple]): ``(global_step, value)`` of the kept checkpoints, best first.

    Example:
        >>> callbacks = [ModelSaver(), MinSaver("val-error-top1"),
        ...              InferenceRunner(data_val, [ClassificationError("wrong-top1",
        ...                                                             "val-error-top1")])]
        >>> # later: SaverRestore("train_log/mnist/min-val-error-top1")
    """

    def __init__(self, monitor_stat, reverse=False, filename=None, checkpoint_dir=None, *,
                 top_k=1):
        super().__init__(monitor_stat, mode="max" if reverse else "min")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}.")
        if isinstance(filename, bool):
            raise TypeError(f"{type(self).__name__}({monitor_stat!r}, {filename}): the file name "
                            f"is a string; as in tensorpack, MaxSaver's second argument is the "
                            f"file name and MinSaver's is reverse (MinSaver(stat, True) keeps the "
                            f"maximum).")
        if filename is not None and (not isinstance(filename, str) or not filename
                                     or os.sep in filename or "/" in filename):
            raise ValueError(f"filename must be a plain file name without a directory, got {filename!r}; "
                             "use checkpoint_dir= for the directory.")
        self.filename = filename or "{}-{}".format(self.mode, monitor_stat.replace("/", "_"))
        self.top_k = top_k
        self._dir_arg = checkpoint_dir
        self.checkpoint_dir = None
        self.top = []
        self._model_savers = []
        self._triggered = False

    def _setup_graph(self):
        self.checkpoint_dir = _resolve_dir(self._dir_arg, self)
        self._saver = tfv1.train.Saver(var_list=self.graph.get_collection(
            tfv1.GraphKeys.GLOBAL_VARIABLES), write_version=tfv1.train.SaverDef.V2)

    def _before_train(self):
        self._model_savers = [cb for cb in map(_unwrap, self.trainer.callbacks)
                              if isinstance(cb, ModelSaver)]
        self.skip_values_before(self.global_step)

    def _trigger(self):
        self._triggered = True
        self._check(own_save=True, warn_missing=False)

    def _before_epoch(self):
        self._check(own_save=True, warn_missing=self._triggered)

    def _after_train(self):
        self._check(own_save=self.trainer.training_error is None, warn_missing=self._triggered)

    def rank_prefix(self, rank):
        """The checkpoint prefix of the ``rank``-th best (from 1)."""
        name = self.filename if self.top_k == 1 else f"{self.filename}-{rank}"
        return os.path.join(self.checkpoint_dir, name)

    def _rank_of(self, value):
        if math.isnan(value):
            return None
        for i, (_, kept) in enumerate(self.top):
            if self.is_improvement(value, reference=kept):
                return i
        return len(self.top) if len(self.top) < self.top_k else None

    def _check(self, own_save, warn_missing):
        for step, value in self.read_new_values(warn_missing):
            rank = self._rank_of(value)
            if rank is not None:
                self._keep(step, value, rank, own_save)

    def _keep(self, step, value, rank, own_save):
        source = next((p for p in (ms.checkpoint_at(step) for ms in self._model_savers) if p), None)
        if source is None and not (own_save and step == self.global_step):
            logger.error(
                "{}: {}={} at global step {} is {} so far, but no checkpoint of that step exists "
                "and the weights changed since (now at step {}); it is not kept. Let a ModelSaver "
                "(max_to_keep > 1) save at the trigger where the stat is put.".format(
                    self, self.stat, value, step, "the best" if self.top_k == 1 else
                    f"among the best {self.top_k}", self.global_step))
            return
        temp = os.path.join(self.checkpoint_dir,
                            f".{self.filename}.tmp-{uuid.uuid4().hex}")
        try:
            staged = self._stage_copy(source, temp) if source else self._stage_save(temp)
            for i in range(min(len(self.top), self.top_k - 1) - 1, rank - 1, -1):
                self._move(_checkpoint_files(self.rank_prefix(i + 1)), self.rank_prefix(i + 2))
            self._move(staged, self.rank_prefix(rank + 1))
        except _IO_ERRORS as e:
            with contextlib.suppress(OSError):
                for path in _checkpoint_files(temp).values():
                    os.remove(path)
            logger.error(f"{self}: could not keep the checkpoint of global step {step} ({self.stat}={value}) as {self.rank_prefix(rank + 1)}: {_describe_error(e)}. "
                         "Training continues.")
            return
        self.top.insert(rank, (step, value))
        del self.top[self.top_k:]
        self.best_step, self.best = self.top[0]
        self._write_json()
        logger.info("{}: {}={} at global step {} is the best{}; kept as {}.".format(
            self, self.stat, value, step, "" if self.top_k == 1 else f" #{rank + 1}",
            self.rank_prefix(rank + 1)))

    @staticmethod
    def _stage_copy(source, temp):
        staged = {}
        for suffix, path in _checkpoint_files(source).items():
            staged[suffix] = temp + suffix
            shutil.copyfile(path, temp + suffix)
        return staged

    def _stage_save(self, temp):
        with self.graph.as_default():
            self._saver.save(self.trainer.sess, temp, write_meta_graph=False, write_state=False)
        return _checkpoint_files(temp)

    @staticmethod
    def _move(files, prefix):
        """Move checkpoint ``files`` ({suffix: path}) to ``prefix``, replacing what is there."""
        for suffix, path in _checkpoint_files(prefix).items():
            if suffix not in files:
                os.remove(path)
        for suffix in sorted(files, key=_install_order):
            os.replace(files[suffix], prefix + suffix)

    def _write_json(self):
        path = os.path.join(self.checkpoint_dir, self.filename + ".json")
        record = {"stat": self.stat, "mode": self.mode, "checkpoints": [
            {"rank": i + 1, "checkpoint": os.path.basename(self.rank_prefix(i + 1)),
             "global_step": step, "value": value} for i, (step, value) in enumerate(self.top)]}
        temp = f"{path}.tmp-{uuid.uuid4().hex}"
        try:
            with open(temp, "w") as f:
                json.dump(record, f, indent=2)
            os.replace(temp, path)
        except OSError as e:
            logger.error(f"{self}: could not write {path}: {_describe_error(e)}.")

    def _state_dict(self):
        state = super()._state_dict()
        state["top"] = [[step, value] for step, value in self.top]
        return state

    def _load_state_dict(self, state):
        super()._load_state_dict(state)
        self.top = [(step, value) for step, value in state.get("top", [])]


class MaxSaver(MinSaver):
    """Keep a copy of the checkpoint of the step where a monitored stat was at its maximum.

    The same as :class:`MinSaver` with the order reversed; the files are ``max-<stat>``. As in
    tensorpack, the second positional argument is the file name: ``MaxSaver("acc", "best")``
    keeps the maximum in ``best``.

    Example:
        >>> MaxSaver("val-accuracy", top_k=3)      # max-val-accuracy-1 .. max-val-accuracy-3
    """

    def __init__(self, monitor_stat, filename=None, checkpoint_dir=None, *, top_k=1):
        super().__init__(monitor_stat, True, filename=filename, checkpoint_dir=checkpoint_dir,
                         top_k=top_k)
