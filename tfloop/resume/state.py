"""What a resumed run needs besides the weights, saved next to each checkpoint.

For a checkpoint ``model-N`` (its ``.index``/``.data`` files),
:class:`~tfloop.resume.saver.ResumeStateSaver` writes ``model-N.resume.json`` and, when the
input pipeline can be saved, ``model-N.iterator``:

- the training position to continue from: ``epoch`` and ``local_step`` (the next step to run in
  that epoch; ``local_step == steps_per_epoch`` means only the epoch's end is left) and
  ``global_step``; when each epoch is one pass over data of unknown length, ``steps_per_epoch``
  is null, ``pass_steps`` the length of the last pass that ended (null before one did) and
  ``pass_ended`` whether only the epoch's end is left;
- every callback's :meth:`~tfloop.callbacks.base.Callback.state_dict`, keyed by a stable identity:
  the class name of the callback (inside any wrappers) and its index among callbacks of that class
  (``EarlyStopping#0``, ``MinSaver#1``);
- the input's position, from its :meth:`~tfloop.input.base.InputSource.state_dict`: a tf.data
  iterator's position (serialized by TensorFlow) when the pipeline has no stateful op. A Python
  source's position is its feeder callback's state.

Both files are written atomically (temporary file, then ``os.replace``; a rename of TensorFlow's
file layer in a URL's directory), the iterator file first: the JSON file is what marks the
checkpoint's resume state complete.
"""
import json

from tfloop.utils import files, logger
from tfloop.utils.logdir_format import ITERATOR_SUFFIX, RESUME_SUFFIX

__all__ = ["callback_keys", "collect_callback_states",
           "apply_callback_states", "read_resume_state", "resume_state_path",
           "resume_state_problem",
           "RESUME_SUFFIX", "ITERATOR_SUFFIX"]

FORMAT_VERSION = 1


def resume_state_path(prefix):
    """The resume-state file of checkpoint ``prefix``."""
    return prefix + RESUME_SUFFIX


def callback_keys(callbacks):
    """``[(key, callback)]``: each callback's identity ``<class>#<index among that class>``, using
    the class of the callback inside any wrappers (``PeriodicTrigger(MinSaver(...))`` is
    ``MinSaver#0``)."""
    counts = {}
    keyed = []
    for cb in callbacks:
        name = type(list(cb.walk())[-1]).__name__     # the innermost of a chain of wrappers
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
            logger.error(f"The state of callback {key} ({cb}) cannot be saved as JSON ({e}); a "
                         "resumed run starts this callback afresh. Return only dicts, lists, str, "
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
        logger.warning(f"{source} has the state of callback(s) {', '.join(unknown)} which this run "
                       "does not have; ignored. (Callbacks are matched by class name and index "
                       "among that class.)")
    for key, state in states.items():
        cb = keyed.get(key)
        if cb is None:
            continue
        try:
            cb.load_state_dict(state)
        except Exception as e:
            raise ValueError(f"Callback {key} ({cb}) cannot load its state from {source}: "
                             f"{type(e).__name__}: {e}. Delete that file to resume without the "
                             "callbacks' states.") from e
    restored = sorted(k for k in states if k in keyed)
    if restored:
        logger.info(f"Restored the state of callback(s) {', '.join(restored)} from {source}.")


def _load_resume_state(prefix):
    """The JSON of checkpoint ``prefix``'s resume state, or None when it has none.

    Raises:
        ValueError: the file exists but is not a resume state this version can read.
    """
    path = resume_state_path(prefix)
    if not files.isfile(path):
        return None
    try:
        state = json.loads(files.read_text(path))
    except (OSError, ValueError) as e:
        raise ValueError(f"Resume state {path} cannot be read: {e}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT_VERSION:
        raise ValueError(f"Resume state {path} is not format {FORMAT_VERSION} (got "
                         f"{state.get('format') if isinstance(state, dict) else state!r})")
    return state


def resume_state_problem(prefix):
    """Why the resume state of checkpoint ``prefix`` cannot be used (a sentence without its final
    period), or None when it is readable or absent."""
    try:
        _load_resume_state(prefix)
    except ValueError as e:
        return str(e)
    return None


def read_resume_state(prefix):
    """The resume state of checkpoint ``prefix`` as a dict, or None when it has none or it cannot
    be read (logged: the run then resumes from the checkpoint alone)."""
    try:
        state = _load_resume_state(prefix)
    except ValueError as e:
        logger.warning(f"{e}; resuming from {files.basename(prefix)} alone: the input restarts "
                       "from its beginning and the callbacks start afresh.")
        return None
    if state is None:
        return None
    iterator = state.get("iterator")
    if iterator:
        data_path = files.join(files.dirname(prefix), iterator["file"])
        if not files.isfile(data_path) or files.size(data_path) != iterator["bytes"]:
            logger.warning(f"Resume state {resume_state_path(prefix)} names the input position "
                           f"file {data_path} ({iterator['bytes']} bytes), which is missing or of "
                           "another size; the input restarts from its beginning.")
            state["iterator"] = None
        else:
            state["iterator_bytes"] = files.read_bytes(data_path)
    return state
