"""How fast training goes: throughput per epoch, and the time left."""
import collections
import statistics

from tfloop.callbacks.base import Callback
from tfloop.callbacks.schedule import Schedule
from tfloop.compat import tf, tfv1
from tfloop.utils import logger
from tfloop.utils.checks import check_int, check_positive_number
from tfloop.utils.coerce import tensorpack_int
from tfloop.utils.timer import Clock

__all__ = ["ThroughputTracker", "EstimatedTimeLeft", "format_duration"]

STEPS_PER_SEC = "throughput/steps_per_sec"
SAMPLES_PER_SEC = "throughput/samples_per_sec"


def format_duration(seconds):
    """``3725`` -> ``"1h 02m 05s"``; under a minute: ``"12.3s"``."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d {hours:02d}h {minutes:02d}m"
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s"




class ThroughputTracker(Callback):
    """Put the training throughput of each epoch to the monitors: ``throughput/steps_per_sec`` and
    ``throughput/samples_per_sec``.

    Time is measured from the first step of the epoch to the end of its last step, so epoch-end
    work (validation, checkpoints) does not count. Samples per step: ``samples_per_step`` when
    given; otherwise the first dimension of the first input of every training tower, summed
    (read from the static shape, or fetched along with each step when the batch size varies).
    Without either, only steps per second are put.

    Args:
        samples_per_step (int): the total batch size of one step.
        clock (callable): time source in seconds (for tests); monotonic time by default.

    Example:
        >>> ThroughputTracker()                        # batch size from the inputs
        >>> ThroughputTracker(samples_per_step=256)    # e.g. when inputs are time-major
    """

    _chief_only = False

    def __init__(self, samples_per_step=None, clock=None):
        name = "ThroughputTracker: samples_per_step"
        self._samples_per_step = check_positive_number(tensorpack_int(samples_per_step, name),
                                                       name, allow_none=True)
        self._clock = clock or Clock()
        self._batch_size = None
        self._start = None

    def _setup_graph(self):
        self._find_batch_size()
        self.when = Schedule(fetches=self._batch_size is not None)  # fetched when it varies

    def _find_batch_size(self):
        if self._samples_per_step is not None:
            return
        inputs = self._first_inputs()
        if inputs is None:
            logger.info("ThroughputTracker: the batch size is unknown (no training tower inputs); "
                        "only steps/sec is tracked. Pass samples_per_step= to track samples/sec.")
            return
        sizes = [x.shape[0] for x in inputs]
        if all(s is not None for s in sizes):
            self._samples_per_step = sum(sizes)
        else:
            self._batch_size = tfv1.train.SessionRunArgs(
                fetches=tf.add_n([tf.shape(x)[0] for x in inputs], name="batch_size"))

    def _first_inputs(self):
        towers = self.trainer.towers
        if towers is None:
            return None
        inputs = []
        for tower in towers.training():
            if not tower.inputs or tower.inputs[0].shape.rank in (None, 0):
                return None
            inputs.append(tower.inputs[0])
        return inputs or None

    def _before_epoch(self):
        self._samples = 0
        self._start_step = self.global_step
        self._start = self._clock()

    def _before_run(self, ctx):
        return self._batch_size

    def _after_run(self, ctx, values):
        # With steps_per_run = k the batch size is the run's last step's, for all k steps.
        self._samples += int(values.results) * self.trainer.steps_per_run

    def _after_epoch(self):
        if self._start is None:  # a wrapper skipped this epoch's before_epoch
            return
        elapsed = self._clock() - self._start
        steps = self.global_step - self._start_step
        if elapsed <= 0 or steps <= 0:
            return
        self._start = None
        monitors = self.trainer.monitors
        monitors.put_scalar(STEPS_PER_SEC, steps / elapsed)
        if self._batch_size is not None:
            monitors.put_scalar(SAMPLES_PER_SEC, self._samples / elapsed)
        elif self._samples_per_step is not None:
            monitors.put_scalar(SAMPLES_PER_SEC, steps * self._samples_per_step / elapsed)


class EstimatedTimeLeft(Callback):
    """Log an estimate of the time left after each epoch, from the duration of recent epochs.

    An epoch's duration runs from the end of the previous one (or the start of training) to its
    end, epoch-end work included.

    Args:
        last_k_epochs (int): how many recent epochs the estimate uses.
        median (bool): use their median duration (robust to an odd slow epoch) instead of the mean.
        clock (callable): time source in seconds (for tests); monotonic time by default.

    Example:
        >>> EstimatedTimeLeft(last_k_epochs=3)
        [... @throughput.py:160] Estimated time left: 1h 02m 05s
    """

    def __init__(self, last_k_epochs=5, median=True, clock=None):
        last_k_epochs = check_int(last_k_epochs, "EstimatedTimeLeft: last_k_epochs", at_least=1)
        self._durations = collections.deque(maxlen=last_k_epochs)
        self._median = bool(median)
        self._clock = clock or Clock()
        self._last = None

    def _before_train(self):
        self._last = self._clock()

    def _trigger_epoch(self):
        now = self._clock()
        self._durations.append(now - self._last)
        self._last = now
        epochs_left = self.trainer.max_epoch - self.epoch_num
        if epochs_left <= 0:
            return
        average = statistics.median if self._median else statistics.fmean
        left = average(self._durations) * epochs_left
        logger.info(f"Estimated time left: {format_duration(left)}")
