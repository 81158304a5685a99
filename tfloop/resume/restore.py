"""Continuing the run of a checkpoint: its run state, read once, and what the trainer gives the
input and the callbacks from it right after the session init (format: :mod:`.state`)."""
from tfloop.compat import tf
from tfloop.resume.session_init import checkpoint_global_step
from tfloop.resume.state import (
    ITERATOR_SUFFIX,
    apply_callback_states,
    read_resume_state,
    resume_state_path,
)
from tfloop.utils import logger

__all__ = ["read_run_state", "restore_run_state"]


def read_run_state(prefix):
    """``(state, source)``: the run state of checkpoint ``prefix`` and the file it comes from.

    The state is its resume state (:func:`~tfloop.resume.state.read_resume_state`); for a
    checkpoint without one, ``{"global_step": <the checkpoint's global step>}`` and the
    checkpoint itself. The trainer's loop continues at its position
    (``TrainLoop.load_state_dict``).

    Example:
        >>> state, source = read_run_state("train_log/run/model-6")
    """
    state = read_resume_state(prefix)
    if state is None:
        return {"global_step": checkpoint_global_step(prefix)}, prefix
    return state, resume_state_path(prefix)


def restore_run_state(sess, input_source, callbacks, prefix, state, input_fits):
    """Give the input its saved position (when ``input_fits``: the loop continues at the
    position it was saved for) and every callback its saved state. Called once by the trainer,
    right after the session init restored the variables of ``prefix``.

    Raises:
        ValueError: the saved input position does not fit this run's input pipeline, or a
            callback rejected its state.
    """
    blob = state.get("iterator_bytes")
    if blob is not None and input_fits:
        _restore_input(input_source, sess, blob, prefix)
    if "callbacks" in state:
        apply_callback_states(callbacks, state["callbacks"], resume_state_path(prefix))


def _restore_input(source, sess, blob, prefix):
    try:
        source.load_state_dict(sess, blob)
    except ValueError as e:    # no restore ops: this run's pipeline cannot be saved or restored
        logger.warning(f"{resume_state_path(prefix)} has an input position, but this run's "
                       f"input cannot be saved or restored ({e}); the input restarts from its "
                       "beginning.")
        return
    except tf.errors.OpError as e:
        raise ValueError(
            f"The input position saved in {prefix + ITERATOR_SUFFIX} does not fit this "
            f"run's input pipeline ({e.message.splitlines()[0]}). Resume with the same "
            f"dataset definition, or delete {resume_state_path(prefix)} to restart "
            "the input from its beginning.") from None
    logger.info(f"Restored the input position of {prefix}.")
