"""Several ModelSavers writing to one directory, as tensorpack scripts do: a frequent saver that
keeps the few latest checkpoints and a long-lived one that keeps more (``max_to_keep``) of
another period.

With tensorpack each saver's ``tf.train.Saver`` kept its own list: the ``checkpoint`` file named
only the last writer's checkpoints, and a checkpoint both saved at one step (``model-<step>``) was
deleted when the frequent saver dropped it, whatever the long-lived one meant to keep. Here the
savers of one directory keep their checkpoints together:

- each saver keeps the checkpoints it saved by its own ``max_to_keep`` and
  ``keep_checkpoint_every_n_hours``, as a single saver does; a checkpoint's files are deleted only
  when no saver keeps it;
- two savers that save at one global step share one checkpoint, written once;
- the ``checkpoint`` state file lists every checkpoint kept, in the order they were written, and
  names the last written as the latest (what resuming and ``SmartInit(<directory>)`` load);
- a run resumed with its resume state (``AutoResumeTrainConfig``) gives each saver back the
  checkpoints it kept (its ``state_dict``), so deletion goes on as if the run had not stopped;
  other checkpoints found from an earlier run are kept and listed, and counted by no saver
  (which saver wrote each is not recorded).
"""
import copy
import threading
import time

from tensorflow.python.checkpoint import checkpoint_management

from tfloop.callbacks.checkpoint_io import IO_ERRORS
from tfloop.utils import files, logger

__all__ = ["SharedCheckpointDir"]

class _Retention:
    """The checkpoints one saver keeps: its ``max_to_keep`` latest, plus (as
    ``tf.compat.v1.train.Saver`` does) one every ``keep_hours`` among those it drops."""

    def __init__(self, max_to_keep, keep_hours):
        self.max_to_keep = max_to_keep
        self.keep_seconds = keep_hours * 3600
        self.latest = []          # [(prefix, time saved)], oldest first
        self.next_keep_time = time.time() + self.keep_seconds

    def add(self, prefix):
        """Keep ``prefix``; return ``(dropped, kept for good)``: the checkpoints it no longer
        keeps, and those it drops from its latest but keeps every n hours."""
        self.latest = [entry for entry in self.latest if entry[0] != prefix]
        self.latest.append((prefix, time.time()))
        dropped, for_good = [], []
        while self.max_to_keep and len(self.latest) > self.max_to_keep:
            old, saved_at = self.latest.pop(0)
            if saved_at > self.next_keep_time:
                self.next_keep_time += self.keep_seconds
                for_good.append(old)
            else:
                dropped.append(old)
        return dropped, for_good


class SharedCheckpointDir:
    """The checkpoints the ModelSavers of one directory keep, and its ``checkpoint`` state file
    (see the module doc). Thread-safe: background writes report from their threads.

    Args:
        directory (str): the checkpoint directory, resolved.

    Example:
        >>> shared = SharedCheckpointDir("/runs/a")
        >>> shared.join("frequent", max_to_keep=2, keep_hours=10000)
        >>> shared.join("long-lived", max_to_keep=100, keep_hours=10000)
        >>> shared.written("frequent", "/runs/a/model-100")   # after the files are complete
    """

    def __init__(self, directory):
        self.directory = directory
        self.meta_written = False
        # The members' in-place writer (checkpoint_inplace.py): keeps the data file of each
        # checkpoint deleted here for the next write.
        self.in_place_writer = None
        self._lock = threading.Lock()
        self._members = {}
        self._for_good = set()
        self._writes = {}            # global step -> the PendingWrite of its files, or None
        self._pending = {}           # member -> the prefixes it keeps once written
        self._order = {}             # every prefix kept so far, in the order written

    def join(self, member, max_to_keep, keep_hours):
        """Add a saver (any hashable key) with its retention."""
        self._members[member] = _Retention(max_to_keep, keep_hours)
        self._pending[member] = {}

    def __len__(self):
        return len(self._members)

    def keep_if_written(self, member, step, prefix, kept):
        """When another member writes (or wrote) ``prefix``, the checkpoint of global step
        ``step``, in this run: ``member`` keeps it too once it is complete, then ``kept(step,
        prefix)`` is called; True. Else False: ``member`` writes it."""
        with self._lock:
            if step not in self._writes:
                return False
            pending = self._writes[step]
            self._pending[member][prefix] = None

        def keep():
            self.written(member, prefix)
            kept(step, prefix)
        if pending is None:
            keep()
        else:
            pending.then(keep)
        return True

    def started(self, member, step, prefix):
        """``member`` starts writing ``prefix``, the checkpoint of ``step`` (called before the
        write begins, so that it is kept from now on)."""
        with self._lock:
            self._writes[step] = None
            self._pending[member][prefix] = None

    def runs_in_background(self, step, pending):
        """The write of ``step`` runs in the background, as ``pending``: another member saving
        that step waits for it."""
        with self._lock:
            if step in self._writes:
                self._writes[step] = pending

    def failed(self, step, prefix):
        """The write of ``prefix`` failed: another member saving that step writes it itself."""
        with self._lock:
            self._writes.pop(step, None)
            for waiting in self._pending.values():
                waiting.pop(prefix, None)

    def keep_earlier(self, prefixes):
        """Keep the complete checkpoints of an earlier run, listed in the state file."""
        with self._lock:
            owned = self._kept()
            new = [p for p in prefixes if p not in owned]
            self._for_good.update(new)
            for prefix in prefixes:
                self._order.setdefault(prefix, None)
        if new:
            logger.info(f"ModelSaver: {len(new)} earlier checkpoint(s) in {self.directory}, "
                        f"which {len(self)} ModelSavers share, are kept: which saver wrote each "
                        "is not recorded, so none of them counts them towards its max_to_keep.")

    def written(self, member, prefix):
        """``member`` keeps the complete checkpoint ``prefix``: delete what no member keeps any
        longer and rewrite the state file."""
        with self._lock:
            self._pending[member].pop(prefix, None)
            self._order.pop(prefix, None)
            self._order[prefix] = None
            dropped, for_good = self._members[member].add(prefix)
            self._for_good.update(for_good)
            kept = self._kept()
            for old in dropped:
                if old not in kept:
                    self._order.pop(old, None)
                    self._remove(old)
            self._write_state(kept)

    def state_of(self, member):
        """What ``member`` keeps, as its resume state: the checkpoints it keeps once the writes
        under way are complete (names, with the time each was saved), and when it next keeps one
        for good."""
        with self._lock:
            retention = copy.deepcopy(self._members[member])
            for prefix in self._pending[member]:
                retention.add(prefix)
        return {"kept": [[files.basename(p), t] for p, t in retention.latest],
                "next_keep_time": retention.next_keep_time}

    def restore(self, member, state):
        """Give ``member`` back what it kept (:meth:`state_of`), the checkpoints still there."""
        try:
            kept = [(files.join(self.directory, name), float(t)) for name, t in state["kept"]]
            next_keep_time = float(state["next_keep_time"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"not a ModelSaver state of a shared directory: {state!r}") from None
        retention = self._members[member]
        with self._lock:
            retention.latest = [(p, t) for p, t in kept if files.exists(p + ".index")]
            retention.next_keep_time = next_keep_time

    def _kept(self):
        kept = set(self._for_good)
        for member, retention in self._members.items():
            kept.update(prefix for prefix, _ in retention.latest)
            kept.update(self._pending[member])
        return kept

    def _remove(self, prefix):
        """Delete the files of checkpoint ``prefix``: its ``.index`` first, so that what a
        failure leaves is an incomplete checkpoint, which every reader skips."""
        name, writer = files.basename(prefix), self.in_place_writer
        try:
            if writer is not None:
                writer.keep_data_of(prefix)
            files.remove(prefix + ".index")
            for other in files.listdir(self.directory):
                if other.startswith(name + ".data-"):
                    files.remove(files.join(self.directory, other))
        except IO_ERRORS as e:
            logger.warning(f"ModelSaver: could not delete the old checkpoint {prefix}: "
                           f"{type(e).__name__}: {e}")
        finally:
            if writer is not None:
                writer.settle()

    def _write_state(self, kept):
        names = [files.basename(p) for p in self._order if p in kept]
        if not names:
            return
        # The internal form: the public one logs a deprecation warning at every call.
        checkpoint_management.update_checkpoint_state_internal(
            self.directory, names[-1], all_model_checkpoint_paths=names, save_relative_paths=True)
