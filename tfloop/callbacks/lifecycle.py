"""The hooks of a training, as the trainer calls them: in which order, when each runs
(:data:`HOOKS`), which take part in the step's session run or follow each step, and how the
dispatcher reports a hook that raised. :class:`~tfloop.callbacks.base.Callback` documents what
each hook is for. The order of the calls::

    setup_graph                      (graph not finalized yet: create ops here, and only here)
    before_train
    for each epoch:
        before_epoch
        for each step:
            before_run -> the one session.run of the step -> after_run
            trigger_step
        after_epoch
        trigger_epoch                (calls trigger() by default)
    after_train                      (always, even when training raised; all in list order)

Example:
    >>> HOOKS["trigger_step"]
    'step'
"""
from tfloop.utils import logger

__all__ = ["HOOKS", "RUN_HOOKS", "STEP_HOOKS", "annotate_exception"]

# Every public hook after ``setup_graph``, and when it runs: "train" once, "epoch" once per epoch
# (``trigger`` too: by default from ``trigger_epoch``), "run" with the step's session run, "step"
# after each step, "state" at a checkpoint. The wrappers forward and gate hooks from this table.
HOOKS = {
    "before_train": "train", "after_train": "train",
    "before_epoch": "epoch", "after_epoch": "epoch", "trigger_epoch": "epoch", "trigger": "epoch",
    "before_run": "run", "after_run": "run",
    "trigger_step": "step",
    "state_dict": "state", "load_state_dict": "state",
}
# The hooks, underscore and public forms, that make a callback part of the step's session run,
# and the ones that make it called after each step.
RUN_HOOKS = ("_before_run", "_after_run", "before_run", "after_run")
STEP_HOOKS = ("_trigger_step", "trigger_step")


def annotate_exception(exc: BaseException, callback: object, hook: str) -> None:
    """Log which callback and hook raised ``exc`` (once), and attach it as a note to the
    exception. Only the :class:`~tfloop.callbacks.group.Callbacks` dispatcher calls it, and never
    for :class:`~tfloop.callbacks.base.StopTraining`, which is a clean stop."""
    if getattr(exc, "_tfloop_annotated", False):
        return
    exc._tfloop_annotated = True  # type: ignore[attr-defined]
    where = f"{callback}.{hook}"
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised in callback {where})")
    logger.error(f"Exception in callback {where}: {type(exc).__name__}: {exc}")
