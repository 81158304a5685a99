"""The step counter every trainer has, always the first callback. tensorpack's module of that
name also holds the progress bar, the tensor printer and the session-run timeout, re-exported
here."""
from tfloop.callbacks.base import Callback
from tfloop.callbacks.progress import ProgressBar
from tfloop.callbacks.tensor_printer import TensorPrinter
from tfloop.callbacks.timeout import SessionRunTimeout
from tfloop.callbacks.trainer_view import StepCounter
from tfloop.tfutils.common import get_global_step_var

__all__ = ["MaintainStepCounter", "ProgressBar", "TensorPrinter", "SessionRunTimeout"]


class MaintainStepCounter(Callback):
    """Keep the trainer's Python ``global_step`` in step with the graph's ``global_step`` variable.

    The training op increments the variable; this callback reads it once before training (so a
    restored run continues counting) and advances the Python counter after every training step,
    before any other callback's ``after_run`` sees it. A callback's own
    ``trainer.hooked_sess.run`` (in a trigger) runs no training step and counts nothing.

    Args:
        counter (StepCounter): the trainer's count of steps (its ``TrainLoop``), which the
            trainer hands over when it adds this callback.

    Example:
        >>> MaintainStepCounter(loop)     # what a Trainer registers first, with its TrainLoop
    """

    _chief_only = False

    def __init__(self, counter: StepCounter) -> None:
        self._counter = counter

    def _setup_graph(self):
        self.gs_var = get_global_step_var()

    def _before_train(self):
        self._counter.global_step = int(self.trainer.sess.run(self.gs_var))

    def _after_run(self, ctx, values):
        self._counter.count_run()
