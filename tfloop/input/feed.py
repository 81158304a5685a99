"""FeedInput: datapoints from any Python iterable, fed through the step's one session.run."""
from tfloop.callbacks.base import Callback, StopTraining
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource
from tfloop.input.loader import (
    PASS_END,
    check_iterable,
    close_data,
    data_length,
    datapoint_components,
    iter_datapoints,
    reset_data,
)
from tfloop.input.passes import in_whole_groups
from tfloop.utils.coerce import tensorpack_keywords

__all__ = ["FeedInput"]


class _FeedNext(Callback):
    """Feeds each step's datapoints; its state is the position after the last trained one."""

    _chief_only = False

    def __init__(self, source):
        self._source = source

    def _before_train(self):
        self._source.passes = self.trainer.epochs_are_passes and self._source.marks_pass_ends()

    def _before_run(self, ctx):
        return tfv1.train.SessionRunArgs(fetches=None, feed_dict=self._source.next_feed())

    def _after_run(self, ctx, values):
        self._source.commit_fed()

    def _after_train(self):
        self._source.close()

    def _state_dict(self):
        pass_num, index = self._source.trained_position
        return {"pass": pass_num, "index": index}

    def _load_state_dict(self, state):
        self._source.start_index = int(state["index"])

    def __str__(self):
        return f"FeedNext[{self._source}]"


class FeedInput(InputSource):
    """Feed each step's inputs from a Python iterable of datapoints, read in the training thread.

    Each datapoint is a list/tuple in the order of ``inputs()`` (or a dict keyed by input name).
    ``df`` may be a list, a DataFlow (its ``reset_state()`` is called before the first datapoint)
    or any re-iterable object; its ``len()``, when it has one, is the default ``steps_per_epoch``.
    With several training towers, each tower is fed a datapoint of its own every step. Data
    without a length (and ``infinite=True``) says where each pass ends: without
    ``steps_per_epoch``, each epoch is one pass (see :mod:`tfloop.input.passes`). With
    :class:`~tfloop.train.config.AutoResumeTrainConfig`, a resumed run continues at the datapoint
    after the last one trained. :class:`~tfloop.input.queue.QueueInput` reads the same data in a
    background thread instead, overlapping it with training.

    Args:
        df: the datapoints, one batch each.
        infinite (bool): iterate ``df`` again whenever it runs out. With False, training stops
            (as with ``StopTraining``) when ``df`` is exhausted.

    Example:
        >>> batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, len(x), 32)]
        >>> TrainConfig(model=MyModel(), data=FeedInput(batches), max_epoch=5)
    """


    @tensorpack_keywords(ds="df")
    def __init__(self, df, infinite=True):
        self._data = check_iterable(df, "FeedInput")
        self.infinite = bool(infinite)
        self._datapoints = None
        self._reset_done = False
        self.placeholders = None
        self._tower_placeholders = []
        self._datapoints_fed = 0
        self.start_index = 0
        self._fed_position = self.trained_position = (0, 0)
        self._marks_passes = False
        self.passes = False   # the epochs are passes (set before training)
        self._pass_end_flags = []

    def _setup(self, input_signature):
        self._graph = tfv1.get_default_graph()
        self._marks_passes = self.infinite and data_length(self._data) is None
        # Placeholders carry the inputs' own names, so callbacks find them as e.g. "x".
        self.placeholders = self._make_placeholders()

    def _make_placeholders(self):
        placeholders = [tfv1.placeholder(s.dtype, s.shape, name=s.name or f"input{i}")
                        for i, s in enumerate(self.input_signature)]
        if self._marks_passes:
            placeholders.append(tfv1.placeholder(tf.bool, [], name="pass_end"))
        return placeholders

    def _get_input_tensors(self):
        # Every call (one per training tower) gets placeholders of its own, fed its own datapoint.
        placeholders = self.placeholders
        if self._tower_placeholders:
            placeholders = self._make_placeholders()
        self._tower_placeholders.append(placeholders)
        if not self._marks_passes:
            return placeholders
        if tfv1.get_default_graph() is self._graph:
            self._pass_end_flags.append(placeholders[-1])
        return placeholders[:-1]

    def _get_callbacks(self):
        return [_FeedNext(self)]

    def setup_state(self):
        """None: the position (the datapoint after the last one trained) is the state of the
        feeder callback."""
        return None

    def size(self):
        return data_length(self._data)

    def marks_pass_ends(self):
        """Whether the data has no length and is repeated (``infinite=True``)."""
        return self._marks_passes

    def pass_end_flags(self):
        return list(self._pass_end_flags)

    def skip_to_next_pass(self, sess):
        """Read datapoints until one that ends its pass, and drop them."""
        if not self.passes:
            super().skip_to_next_pass(sess)
        last = False
        while not last:
            _, _, last = self._next_datapoint()
        self.commit_fed()

    def _reset_once(self):
        if not self._reset_done:
            self._reset_done = True
            reset_data(self._data)

    def close(self):
        """End the current pass; a DataFlow that was reset is closed (its workers stop)."""
        if self._datapoints is not None:
            self._datapoints.close()
            self._datapoints = None
        if self._reset_done:
            close_data(self._data, "FeedInput")

    def _next_datapoint(self):
        """``(index, datapoint, last)``: the next datapoint to feed, and (when the epochs are
        passes) whether it ends its pass."""
        if self._datapoints is None:
            self._reset_once()
            self._datapoints = iter_datapoints(self._data, "FeedInput", self.start_index,
                                               repeat=self.infinite, mark_ends=self.passes)
            if self.passes:   # each pass in whole steps, one datapoint per tower
                self._datapoints = in_whole_groups(
                    self._datapoints, max(1, len(self._tower_placeholders)), PASS_END)
        try:
            pass_num, index, dp = next(self._datapoints)
        except StopIteration:
            raise StopTraining(f"FeedInput's data ended after {self._datapoints_fed} datapoints "
                               f"(infinite=False)") from None
        self._fed_position = (pass_num, index + 1)
        dp, last = dp if self.passes else (dp, False)
        return index, dp, last

    def next_feed(self):
        """The feed_dict for the next step: a datapoint of its own for each tower's placeholders
        (and, when the epochs are passes, whether it ends its pass)."""
        feed = {}
        for placeholders in self._tower_placeholders or [self.placeholders]:
            index, dp, last = self._next_datapoint()
            feed.update(self._feed_for(dp, index, placeholders))
            if self.passes:
                feed[placeholders[-1]] = last
            self._datapoints_fed += 1
        return feed

    def commit_fed(self):
        """Mark the datapoints of the last :meth:`next_feed` as trained (after their step ran)."""
        self.trained_position = self._fed_position

    def iter_feeds(self):
        """Yield the feed_dict of each datapoint of exactly one pass over the data (no repeat).

        Each call starts a new pass, e.g. for one validation run over the data.
        """
        self._reset_once()
        for index, dp in enumerate(self._data):
            yield self._feed_for(dp, index)

    def _feed_for(self, dp, index, placeholders=None):
        placeholders = placeholders or self.placeholders
        values = datapoint_components(dp, self.input_signature, f"FeedInput datapoint {index}")
        return dict(zip(placeholders, values))
