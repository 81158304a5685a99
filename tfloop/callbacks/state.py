"""What a resumed run needs besides the weights, saved next to each checkpoint.

For a checkpoint ``model-N`` (its ``.index``/``.data`` files), :class:`ResumeStateSaver` writes
``model-N.resume.json`` and, when the input pipeline can be saved, ``model-N.iterator``:

- the training position to continue from: ``epoch`` and ``local_step`` (the next step to run in
  that epoch; ``local_step == steps_per_epoch`` means only the epoch's end is left) and
  ``global_step``;
- every callback's :meth:`~tfloop.callbacks.base.Callback.state_dict`, keyed by a stable identity:
  the class name of the callback (inside any wrappers) and its index among callbacks of that class
  (``EarlyStopping#0``, ``MinSaver#1``);
- the tf.data iterator's position (serialized by TensorFlow) when the pipeline has no stateful op.

Both files are written atomically (temporary file, then ``os.replace``), the iterator file first:
the JSON file is what marks the checkpoint's resume state complete.
"""
import json
import os
import re

from tfloop.callbacks.base import Callback, ProxyCallback
from tfloop.callbacks.saver import ModelSaver
from tfloop.compat import tf, tfv1
from tfloop.tfutils.varmanip import checkpoint_step
from tfloop.utils import logger
from tfloop.utils.fs import atomic_write

__all__ = ["ResumeStateSaver", "IteratorState", "callback_keys", "collect_callback_states",
           "apply_callback_states", "read_resume_state", "resume_state_path",
           "RESUME_SUFFIX", "ITERATOR_SUFFIX"]

RESUME_SUFFIX = ".resume.json"
ITERATOR_SUFFIX = ".iterator"
FORMAT_VERSION = 1
_STATEFUL = re.compile(r"Failed to serialize the input pipeline graph: ([^\n]*)")


def resume_state_path(prefix):
    """The resume-state file of checkpoint ``prefix``."""
    return prefix + RESUME_SUFFIX


def _unwrap(cb):
    while isinstance(cb, ProxyCallback):
        cb = cb.cb
    return cb


def callback_keys(callbacks):
    """``[(key, callback)]``: each callback's identity ``<class>#<index among that class>``, using
    the class of the callback inside any wrappers (``PeriodicTrigger(MinSaver(...))`` is
    ``MinSaver#0``)."""
    counts = {}
    keyed = []
    for cb in callbacks:
        name = type(_unwrap(cb)).__name__
        index = counts.get(name, 0)
        counts[name] = index + 1
        keyed.append((f"{name}#{index}", cb))
    return keyed


def collect_callback_states(callbacks):
    """``{key: state}`` of every callback whose ``state_dict()`` is not None.

    A state that cannot be written as JSON is left out with an error naming the callback.
    """
    states = {}
    for key, cb in callback_keys(callbacks):
        state = cb.state_dict()
        if state is None:
            continue
        try:
            json.dumps(state, allow_nan=True)
        except (TypeError, ValueError) as e:
            logger.error(f"The state of callback {key} ({cb}) cannot be saved as JSON ({e}); a resumed "
                         "run starts this callback afresh. Return only dicts, lists, str, "
                         "numbers, bools and None from _state_dict().")
            continue
        states[key] = state
    return states


def apply_callback_states(callbacks, states, source):
    """Give each callback its saved state; name the states that match no callback.

    Raises:
        ValueError: a callback rejected its state; the message names it and ``source``.
    """
    keyed = dict(callback_keys(callbacks))
    unknown = sorted(set(states) - set(keyed))
    if unknown:
        logger.warning("{} has the state of callback(s) {} which this run does not have; ignored. "
                       "(Callbacks are matched by class name and index among that class.)".format(
                           source, ", ".join(unknown)))
    for key, state in states.items():
        cb = keyed.get(key)
        if cb is None:
            continue
        try:
            cb.load_state_dict(state)
        except Exception as e:
            raise ValueError(f"Callback {key} ({cb}) cannot load its state from {source}: {type(e).__name__}: {e}. Delete that "
                             "file to resume without the callbacks' states.") from e
    restored = sorted(k for k in states if k in keyed)
    if restored:
        logger.info("Restored the state of callback(s) {} from {}.".format(", ".join(restored),
                                                                           source))


def read_resume_state(prefix):
    """The resume state of checkpoint ``prefix`` as a dict, or None when it has none.

    Raises:
        ValueError: the file exists but is not a resume state this version can read.
    """
    path = resume_state_path(prefix)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"Resume state {path} cannot be read: {e}. Delete it to resume from the "
                         "checkpoint alone.") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION:
        raise ValueError("Resume state {} is not format {} (got {!r}); delete it to resume from "
                         "the checkpoint alone.".format(path, FORMAT_VERSION, (
                             state.get("format") if isinstance(state, dict) else state)))
    iterator = state.get("iterator")
    if iterator:
        data_path = os.path.join(os.path.dirname(prefix), iterator["file"])
        if not os.path.isfile(data_path) or os.path.getsize(data_path) != iterator["bytes"]:
            logger.warning("Resume state {} names the input position file {} ({} bytes), which is "
                           "missing or of another size; the input restarts from its beginning."
                           .format(path, data_path, iterator["bytes"]))
            state["iterator"] = None
        else:
            with open(data_path, "rb") as f:
                state["iterator_bytes"] = f.read()
    return state


class IteratorState:
    """Save and restore the position of a ``tf.compat.v1`` dataset iterator.

    Graph ops are built by :meth:`build_save` / :meth:`build_restore` (before the graph is
    finalized); the position travels as bytes. A pipeline with a stateful op (``py_function``,
    a random op without a seed, a generator) cannot be saved: :attr:`reason` then says why.

    Args:
        iterator: a ``tf.compat.v1.data.Iterator`` made by ``make_initializable_iterator``.

    Example:
        >>> state = IteratorState(source.iterator)
        >>> state.build_save()
        >>> blob = state.save(sess)
    """

    def __init__(self, iterator):
        self.iterator = iterator
        self.reason = self._check()
        self._save_op = self._restore_op = self._placeholder = None

    def _check(self):
        dataset = self.iterator.initializer.inputs[0]
        graph = dataset.graph
        with graph.as_default(), tf.name_scope("IteratorState"):
            probe = tf.raw_ops.DatasetToGraphV2(input_dataset=dataset, external_state_policy=2)
        try:
            with tfv1.Session(graph=graph) as sess:
                sess.run(probe)
        except tf.errors.OpError as e:
            match = _STATEFUL.search(e.message or "")
            if match:
                return match.group(1).rstrip(".")
            return (e.message or type(e).__name__).splitlines()[0]
        return None

    @property
    def savable(self):
        return self.reason is None

    def _resource(self):
        return self.iterator._iterator_resource

    def build_save(self):
        with tf.name_scope("IteratorState"):
            self._save_op = tf.io.serialize_tensor(tf.raw_ops.SerializeIterator(
                resource_handle=self._resource(), external_state_policy=2))

    def build_restore(self):
        with tf.name_scope("IteratorState"):
            self._placeholder = tfv1.placeholder(tf.string, [], name="serialized")
            self._restore_op = tf.raw_ops.DeserializeIterator(
                resource_handle=self._resource(),
                serialized=tf.io.parse_tensor(self._placeholder, tf.variant))

    def save(self, sess):
        """The iterator's position, as bytes."""
        return sess.run(self._save_op)

    def restore(self, sess, blob):
        """Initialize the iterator and move it to the saved position."""
        sess.run(self.iterator.initializer)
        sess.run(self._restore_op, feed_dict={self._placeholder: blob})


class ResumeStateSaver(Callback):
    """Write the resume state of every checkpoint a :class:`ModelSaver` writes (see the module doc).

    :class:`~tfloop.train.resume.AutoResumeTrainConfig` adds it; add it yourself after your
    ModelSavers to get the same files with a plain ``TrainConfig``. The state of a checkpoint is
    written once every callback finished the trigger in which it was saved (at the next step, or at
    the end of training), so it holds what the callbacks did in that trigger too.

    Args:
        input_source: the training InputSource; a ``DatasetInput``'s iterator position is saved
            when its pipeline allows it (otherwise a resumed run restarts the input, said once);
            a ``QueueInput``'s or ``FeedInput``'s position is its feeder callback's state.

    Attributes:
        iterator_state (IteratorState): saves the input position, or None when it cannot.
        input_note (str): why the input position is not saved, or None.
        written (list[str]): the checkpoints whose resume state this run wrote.

    Example:
        >>> callbacks = [PeriodicTrigger(ModelSaver(), every_k_steps=100),
        ...              ResumeStateSaver(data)]
    """

    # Every worker restores its position through it; only the chief writes (where savers run).
    _chief_only = False

    def __init__(self, input_source=None):
        self._source = input_source
        self.iterator_state = None
        self.input_note = None
        self._savers = []
        self._seen = ()
        self._ended_epoch = None
        self.written = []

    def _setup_graph(self):
        if getattr(self._source, "position_in_callback_state", False):
            # QueueInput, FeedInput: their callback's state_dict() holds the position.
            return
        iterator = getattr(self._source, "iterator", None)
        if iterator is None:
            self.input_note = f"the input {self._source} has no saveable position"
            logger.info(f"ResumeStateSaver: {self.input_note}; a resumed run restarts it from its beginning."
                        )
            return
        state = IteratorState(iterator)
        if not state.savable:
            self.input_note = f"the input pipeline cannot be saved ({state.reason})"
            logger.warning(f"ResumeStateSaver: {self.input_note}, so a resumed run restarts the input from its "
                           "beginning: resuming is exact only for a stateless pipeline.")
            return
        state.build_save()
        self.iterator_state = state

    def _before_train(self):
        self._savers = [cb for cb in map(_unwrap, self.trainer.callbacks)
                        if isinstance(cb, ModelSaver)]
        if not self._savers and self.trainer.is_chief:
            logger.warning("ResumeStateSaver: there is no ModelSaver, so only checkpoints saved on "
                           "a signal get a resume state.")
        self._seen = self._latest()

    def _latest(self):
        return tuple(ms.last_checkpoint for ms in self._savers)

    def _after_epoch(self):
        self._ended_epoch = self.epoch_num

    def _before_run(self, ctx):
        if self._latest() != self._seen:
            # local_step is the last step of the run about to start (steps_per_run may be > 1).
            self._write_new(self.epoch_num, self.local_step - self.trainer.loop.steps_per_run + 1)

    def _after_train(self):
        if self._latest() != self._seen:
            self._write_new(*self.position_after_training())

    def position_after_training(self):
        """Where a run resumed from a checkpoint saved now continues: ``(epoch, local_step)``.

        The epoch counter moves on before ``before_epoch``; when training ended there (a callback
        raised, a second Ctrl-C), none of that epoch's steps ran, so it is where to continue. The
        step is the number of the epoch's steps that finished (by the global step), so a hook that
        raised in the middle of a step does not skip it.
        """
        if self._ended_epoch == self.epoch_num:
            return self.epoch_num + 1, 0
        # Counted from the global step: a hook that raised before or during a step leaves
        # local_step at a step that did not finish.
        return self.epoch_num, self.global_step - self.trainer.loop.epoch_first_global_step

    def _write_new(self, epoch, local_step):
        latest = self._latest()
        new = [p for p, old in zip(latest, self._seen) if p is not None and p != old]
        self._seen = latest
        for prefix in new:
            self.write(prefix, epoch, local_step)

    def write(self, prefix, epoch, local_step):
        """Write the resume state of checkpoint ``prefix`` for position ``(epoch, local_step)``."""
        if not self.trainer.is_chief:
            return
        step = checkpoint_step(prefix)
        if step is not None and step != self.global_step:
            logger.error(f"ResumeStateSaver: checkpoint {prefix} is from global step {step} but training is "
                         f"at step {self.global_step}; its resume state is not written. List ResumeStateSaver "
                         "after every ModelSaver.")
            return
        state = {"format": FORMAT_VERSION, "checkpoint": os.path.basename(prefix),
                 "global_step": self.global_step, "epoch": epoch, "local_step": local_step,
                 "steps_per_epoch": self.trainer.steps_per_epoch,
                 "callbacks": collect_callback_states(self.trainer.callbacks),
                 "iterator": None, "input_note": self.input_note}
        try:
            if self.iterator_state is not None:
                blob = self.iterator_state.save(self.trainer.sess)
                atomic_write(prefix + ITERATOR_SUFFIX, blob)
                state["iterator"] = {"file": os.path.basename(prefix) + ITERATOR_SUFFIX,
                                     "bytes": len(blob)}
            atomic_write(resume_state_path(prefix), json.dumps(state, indent=1, allow_nan=True))
        except (OSError, tf.errors.OpError) as e:
            logger.error(f"ResumeStateSaver could not write the resume state of {prefix}: {type(e).__name__}: {e}. A "
                         "resumed run will start from an earlier checkpoint.")
            return
        self.written.append(prefix)
        self._remove_orphans(os.path.dirname(prefix))

    @staticmethod
    def _remove_orphans(directory):
        """Remove resume states whose checkpoint was deleted (e.g. by ``max_to_keep``), and
        temporary files of writes that a killed process left behind."""
        for name in os.listdir(directory):
            if name.startswith("."):
                stale = name.endswith(".tmp") and (RESUME_SUFFIX + "." in name or
                                                   ITERATOR_SUFFIX + "." in name)
            else:
                suffix = next((s for s in (RESUME_SUFFIX, ITERATOR_SUFFIX) if name.endswith(s)),
                              None)
                stale = suffix is not None and not os.path.exists(
                    os.path.join(directory, name[:-len(suffix)] + ".index"))
            if stale:
                try:
                    os.remove(os.path.join(directory, name))
                except OSError as e:
                    logger.warning(f"ResumeStateSaver: could not remove the stale {name}: {e}.")
