"""Callbacks that bring the model's summaries to the monitors, within the step's one session.run."""
import collections

import numpy as np

from tfloop.callbacks.base import Callback
from tfloop.callbacks.schedule import TRIGGER_MODE, Schedule
from tfloop.compat import tf, tfv1
from tfloop.tfutils.summary import MOVING_SUMMARY_OPS_KEY, moving_summary_name
from tfloop.utils import logger
from tfloop.utils.checks import check_bool, check_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["MovingAverageSummary", "MergeAllSummaries", "SimpleMovingAverage"]


class MovingAverageSummary(Callback):
    """Update the moving averages of ``add_moving_summary`` with every step, and put them to the
    monitors at the end of each epoch.

    The updates are fetched along with the training step (no extra ``session.run``). The averages
    are put in ``after_epoch``, so every callback's ``trigger_epoch`` sees this epoch's values.
    One of the default callbacks.

    Args:
        collection (str): the collection of averaged tensors that ``add_moving_summary`` fills.

    Example:
        >>> # in build_graph: add_moving_summary(cost)
        >>> TrainConfig(..., extra_callbacks=[MovingAverageSummary(), ProgressBar()])
    """

    def __init__(self, collection=MOVING_SUMMARY_OPS_KEY):
        self._collection = collection
        self._fetches = None
        self._values = None

    @property
    def collection(self):
        """The collection of moving-average ops this callback runs."""
        return self._collection

    def _setup_graph(self):
        tensors = [t for t in self.graph.get_collection(self._collection)
                   if isinstance(t, tf.Tensor)]
        self._names = [moving_summary_name(t) for t in tensors]
        if tensors:
            self._fetches = tfv1.train.SessionRunArgs(fetches=tensors)
            logger.detail(f"Maintaining {len(tensors)} moving average(s) with every step: "
                        f"{', '.join(self._names)}.")
        self.when = Schedule(fetches=self._fetches is not None)  # an empty collection: none

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        self._values = values.results

    def _after_epoch(self):
        if self._values is None:
            return
        for name, value in zip(self._names, self._values):
            self.trainer.monitors.put_scalar(name, float(np.asarray(value)))


class MergeAllSummaries(Callback):
    """Fetch the merged summaries of a collection with the last step of each epoch (and every
    ``period`` steps) and put them to the monitors.

    The summaries are fetched along with a training step, never in a ``session.run`` of their own,
    so summaries that depend on the inputs see a real batch. Scalar values inside are also put as
    scalars. Does nothing when the collection has no summaries. One of the default callbacks.
    When each epoch is one pass over data of unknown length, the epoch's last step is not known
    before it runs: the summaries go with the step the last pass's length says is the last, and
    in the first pass with its first step (see :func:`expects_last_step`).

    Args:
        period (int): when > 0, also fetch with every step whose ``global_step`` (after the step)
            is a multiple of ``period``.
        run_alone (bool): evaluate the summaries in a ``session.run`` of their own, after the
            step, at the same points (only for summaries that do not depend on the inputs).
        key (str): the summary collection; ``tf.compat.v1.GraphKeys.SUMMARIES`` by default.
            Instances with different keys are different callbacks: a second one beside the
            default writes its own collection at its own period.

    Example:
        >>> MergeAllSummaries(period=100)       # histograms every 100 steps and every epoch
        >>> # beside the default one, the summaries of collection "OFTEN" every 2 steps:
        >>> TrainConfig(..., callbacks=[MergeAllSummaries(period=2, key="OFTEN")])
    """

    def __init__(self, period=0, run_alone=False, key=None):
        period = check_int(tensorpack_int(period, "MergeAllSummaries: period"),
                           "MergeAllSummaries: period", at_least=0,
                           note="0: once per epoch")
        check_bool(run_alone, "MergeAllSummaries: run_alone", note="the collection is key=")
        self._period = period
        self._run_alone = run_alone
        self._key = key or tfv1.GraphKeys.SUMMARIES
        self._summary = None
        self._fetches = None
        # Fetched with the epoch's last step (and every period steps), or run alone after every
        # period steps (the epoch's end runs _trigger).
        self.when = Schedule(every_k_steps=period or None, last_step_of_epoch=not run_alone,
                             step_hook=run_alone and period > 0)

    @property
    def collection(self):
        """The summary collection this callback merges (``key``)."""
        return self._key

    def _setup_graph(self):
        self._summary = tfv1.summary.merge_all(self._key)
        if self._summary is not None and not self._run_alone:
            self._fetches = tfv1.train.SessionRunArgs(fetches=self._summary)
        self.when = self.when.replace(fetches=self._fetches is not None)

    def _run_summary(self):
        if self._summary is not None:
            self.trainer.monitors.put_summary(self.trainer.sess.run(self._summary))

    def _trigger_step(self):
        last_of_epoch = self.trainer.is_last_step  # _trigger runs then
        if not last_of_epoch:
            self._run_summary()

    def _trigger(self):
        if self._run_alone:
            self._run_summary()

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        self.trainer.monitors.put_summary(values.results)

    def __str__(self):
        alone = ", run_alone=True" if self._run_alone else ""
        key = "" if self._key == tfv1.GraphKeys.SUMMARIES else f", key={self._key!r}"
        return f"MergeAllSummaries(period={self._period}{alone}{key})"


class SimpleMovingAverage(Callback):
    """Put the plain average of scalar tensors over the last ``window_size`` steps, as
    ``<name>/SMA``, every ``window_size`` global steps.

    The values are fetched along with each training step (no extra ``session.run``).

    Args:
        tensors (list[str]): names of scalar tensors, in the graph or the first training tower.
        window_size (int): the number of steps averaged, and the period of the average.

    Example:
        >>> callbacks = [SimpleMovingAverage(["cost"], 100)]       # "cost/SMA" every 100 steps
    """

    def __init__(self, tensors, window_size):
        if isinstance(tensors, str):
            tensors = [tensors]
        self._names = list(tensors)
        if not self._names or not all(isinstance(n, str) and n for n in self._names):
            raise ValueError(f"SimpleMovingAverage needs tensor names, got {tensors!r}.")
        window_size = check_int(tensorpack_int(window_size, "SimpleMovingAverage: window_size"),
                                "SimpleMovingAverage: window_size", at_least=1)
        self._display_names = [n[:-2] if n.endswith(":0") else n for n in self._names]
        self._window = window_size
        self._queue = collections.deque(maxlen=window_size)
        # Fetched with every step; the averages are put (trigger) every window_size steps.
        self.when = Schedule(every_k_steps=window_size, mode=TRIGGER_MODE)

    def _setup_graph(self):
        tensors = self.get_tensors_maybe_in_tower(self._names)
        for name, t in zip(self._names, tensors):
            if not isinstance(t, tf.Tensor) or t.shape.rank != 0:
                raise ValueError(f"SimpleMovingAverage averages scalar tensors; {name} is "
                                 f"{t!r}.")
        self._fetches = tfv1.train.SessionRunArgs(fetches=tensors)

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        self._queue.append(values.results)

    def _trigger(self):
        if not self._queue:    # triggered (by a wrapper) before the first step
            return
        averages = np.asarray(self._queue, dtype=np.float64).mean(axis=0)
        for name, average in zip(self._display_names, averages):
            self.trainer.monitors.put_scalar(f"{name}/SMA", float(average))

    def __str__(self):
        return f"SimpleMovingAverage({self._names}, {self._window})"
