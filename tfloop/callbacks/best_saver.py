"""The best checkpoints by a monitored stat: MinSaver and MaxSaver."""
from __future__ import annotations

import contextlib
import json
import math
import os
import uuid

from tfloop.callbacks.checkpoint_io import IO_ERRORS, describe_io_error, resolve_checkpoint_dir
from tfloop.callbacks.model_saver import ModelSaver
from tfloop.callbacks.stat_monitor import StatMonitorCallback
from tfloop.compat import tfv1
from tfloop.utils import files, logger
from tfloop.utils.checks import check_int
from tfloop.utils.fs import atomic_write, display_path

__all__ = ["MinSaver", "MaxSaver"]


def _checkpoint_files(prefix):
    """The files of the V2 checkpoint ``prefix``, as {suffix: path}: ``.index`` and ``.data-*``."""
    dirname, base = files.dirname(prefix), files.basename(prefix)
    try:
        names = files.listdir(dirname)
    except FileNotFoundError:
        return {}
    return {name[len(base):]: files.join(dirname, name) for name in names
            if name == base + ".index" or name.startswith(base + ".data-")}


def _install_order(suffix):
    return suffix == ".index"       # data files first, the index last


def _check_filename(filename, owner, monitor_stat):
    if isinstance(filename, bool):
        raise TypeError(f"{owner}({monitor_stat!r}, {filename}): the file name is a string; as in "
                        f"tensorpack, MaxSaver's second argument is the file name and MinSaver's "
                        f"is reverse (MinSaver(stat, True) keeps the maximum).")
    if filename is not None and (not isinstance(filename, str) or not filename
                                 or os.sep in filename or "/" in filename):
        raise ValueError(f"filename must be a plain file name without a directory, got "
                         f"{filename!r}; use checkpoint_dir= for the directory.")
    return filename


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
    temporary names and moved into place (``os.replace``; a rename of TensorFlow's file layer
    for a URL).

    With ``top_k=k > 1`` the k best are kept, ranked: ``min-<stat>-1`` (best) to ``min-<stat>-k``,
    and the JSON file lists all of them. A value enters them when it beats one of them by more than
    ``min_delta``. A best value whose weights can no longer be found (put at an earlier step that
    no ModelSaver kept) is logged as an error, not kept.

    The arguments are tensorpack's (``monitor_stat``, ``reverse``, ``filename``,
    ``checkpoint_dir``), with the names of the stat-watching family as keywords: ``mode`` says
    the direction as :class:`EarlyStopping` does, and ``reverse=True`` is tensorpack's name for
    ``mode="max"``. Giving both is a TypeError.

    Args:
        monitor_stat (str): the stat's name, e.g. ``"val-error-top1"``.
        reverse (bool): keep the maximum instead (tensorpack's name for ``mode="max"``).
        filename (str): the name of the kept checkpoint; ``min-<stat>`` (or ``max-<stat>``).
        checkpoint_dir (str): where to keep it; the log directory by default.
        top_k (int): how many of the best to keep.
        mode (str): ``"min"`` (the default) or ``"max"``.
        min_delta (float): a value must beat a kept one by more than this to replace it.

    Attributes:
        top (list[tuple]): ``(global_step, value)`` of the kept checkpoints, best first.
        best (float), best_step (int): the best value seen and the global step it was put at
            (the same as ``top[0]`` unless its checkpoint could not be kept).

    Example:
        >>> callbacks = [ModelSaver(), MinSaver("val-error-top1"),
        ...              InferenceRunner(data_val, [ClassificationError("wrong-top1",
        ...                                                             "val-error-top1")])]
        >>> # later: SaverRestore("train_log/mnist/min-val-error-top1")
    """

    def __init__(self, monitor_stat: str, reverse: bool | None = None,
                 filename: str | None = None, checkpoint_dir: str | os.PathLike | None = None,
                 *, top_k: int = 1, mode: str | None = None, min_delta: float = 0.0) -> None:
        super().__init__(monitor_stat, mode=self._mode_or_reverse(mode, reverse),
                         min_delta=min_delta)
        self.top_k = check_int(top_k, f"{type(self).__name__}: top_k", at_least=1)
        filename = _check_filename(filename, type(self).__name__, monitor_stat)
        self.filename = filename or f"{self.mode}-{monitor_stat.replace('/', '_')}"
        self._dir_arg = checkpoint_dir
        self.checkpoint_dir = None
        self.top: list[tuple[int, float]] = []
        self._model_savers: list[ModelSaver] = []

    @property
    def reverse(self) -> bool:
        """Whether the maximum is kept (tensorpack's name for ``mode == "max"``)."""
        return self.mode == "max"

    def _setup_graph(self):
        self.checkpoint_dir = resolve_checkpoint_dir(self._dir_arg, self, self.trainer.logdir)
        self._saver = tfv1.train.Saver(var_list=self.graph.get_collection(
            tfv1.GraphKeys.GLOBAL_VARIABLES), write_version=tfv1.train.SaverDef.V2)

    def _before_train(self):
        self._model_savers = self.trainer.callbacks_of(ModelSaver)
        super()._before_train()

    def _after_train(self):
        self.poll(warn_missing=self._triggered)

    def rank_prefix(self, rank):
        """The checkpoint prefix of the ``rank``-th best (from 1)."""
        name = self.filename if self.top_k == 1 else f"{self.filename}-{rank}"
        return files.join(self.checkpoint_dir, name)

    def _rank_of(self, value):
        if math.isnan(value):
            return None
        for i, (_, kept) in enumerate(self.top):
            if self.is_improvement(value, reference=kept):
                return i
        return len(self.top) if len(self.top) < self.top_k else None

    def _on_new_value(self, step, value, improved):
        rank = self._rank_of(value)
        if rank is not None:
            self._keep(step, value, rank)

    def _keep(self, step, value, rank):
        source = next((p for p in (ms.checkpoint_at(step) for ms in self._model_savers) if p), None)
        # The current weights are those of ``step`` until the next step, unless training failed.
        own_save = step == self.global_step and self.trainer.training_error is None
        if source is None and not own_save:
            among = "the best" if self.top_k == 1 else f"among the best {self.top_k}"
            logger.error(
                f"{self}: {self.monitor_stat}={value} at global step {step} is {among} so far, "
                f"but no checkpoint of that step exists and the weights changed since (now at "
                f"step {self.global_step}); it is not kept. Let a ModelSaver (max_to_keep > 1) "
                f"save at the trigger where the stat is put.")
            return
        temp = files.join(self.checkpoint_dir, f".{self.filename}.tmp-{uuid.uuid4().hex}")
        try:
            staged = self._stage_copy(source, temp) if source else self._stage_save(temp)
            for i in range(min(len(self.top), self.top_k - 1) - 1, rank - 1, -1):
                self._move(_checkpoint_files(self.rank_prefix(i + 1)), self.rank_prefix(i + 2))
            self._move(staged, self.rank_prefix(rank + 1))
        except IO_ERRORS as e:
            with contextlib.suppress(OSError):
                for path in _checkpoint_files(temp).values():
                    files.remove(path)
            logger.error(f"{self}: could not keep the checkpoint of global step {step} "
                         f"({self.monitor_stat}={value}) as {self.rank_prefix(rank + 1)}: "
                         f"{describe_io_error(e)}. Training continues.")
            return
        self.top.insert(rank, (step, value))
        del self.top[self.top_k:]
        self._write_json()
        which = "" if self.top_k == 1 else f" #{rank + 1}"
        logger.info(f"{self}: {self.monitor_stat}={value} at global step {step} is the "
                    f"best{which}; kept as {display_path(self.rank_prefix(rank + 1))}.")

    @staticmethod
    def _stage_copy(source, temp):
        staged = {}
        for suffix, path in _checkpoint_files(source).items():
            staged[suffix] = temp + suffix
            files.copy(path, temp + suffix)
        return staged

    def _stage_save(self, temp):
        with self.graph.as_default():
            self._saver.save(self.trainer.sess, temp, write_meta_graph=False, write_state=False)
        return _checkpoint_files(temp)

    @staticmethod
    def _move(staged, prefix):
        """Move checkpoint files ``staged`` ({suffix: path}) to ``prefix``, replacing what is
        there."""
        for suffix, path in _checkpoint_files(prefix).items():
            if suffix not in staged:
                files.remove(path)
        for suffix in sorted(staged, key=_install_order):
            files.rename(staged[suffix], prefix + suffix)

    def _write_json(self):
        path = files.join(self.checkpoint_dir, self.filename + ".json")
        record = {"stat": self.monitor_stat, "mode": self.mode, "checkpoints": [
            {"rank": i + 1, "checkpoint": files.basename(self.rank_prefix(i + 1)),
             "global_step": step, "value": value} for i, (step, value) in enumerate(self.top)]}
        try:
            atomic_write(path, lambda f: json.dump(record, f, indent=2))
        except OSError as e:
            logger.error(f"{self}: could not write {path}: {describe_io_error(e)}.")

    def _state_dict(self):
        state = super()._state_dict()
        state["top"] = [[step, value] for step, value in self.top]
        return state

    def _load_state_dict(self, state):
        super()._load_state_dict(state)
        self.top = [(step, value) for step, value in state.get("top", [])]


class MaxSaver(MinSaver):
    """Keep a copy of the checkpoint of the step where a monitored stat was at its maximum.

    The same as :class:`MinSaver` with ``mode="max"``; the files are ``max-<stat>``. As in
    tensorpack, the second positional argument is the file name (``MaxSaver("acc", "best")``
    keeps the maximum in ``best``), and MaxSaver takes no ``reverse`` (nor ``mode``): it always
    keeps the maximum, and ``MaxSaver(stat, reverse=True)`` is a TypeError, as in tensorpack. Keep
    the minimum with ``MinSaver(stat)``.

    Example:
        >>> MaxSaver("val-accuracy", top_k=3)      # max-val-accuracy-1 .. max-val-accuracy-3
    """

    def __init__(self, monitor_stat: str, filename: str | None = None,
                 checkpoint_dir: str | os.PathLike | None = None, *, top_k: int = 1,
                 min_delta: float = 0.0) -> None:
        super().__init__(monitor_stat, True, filename=filename, checkpoint_dir=checkpoint_dir,
                         top_k=top_k, min_delta=min_delta)
