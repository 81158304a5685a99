"""FeedInput: datapoints from any Python iterable, fed through the step's one session.run."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tfv1
from tfloop.input.base import InputSource, check_value_matches_spec

__all__ = ["FeedInput"]


class _FeedNext(Callback):
    _chief_only = False

    def __init__(self, source):
        self._source = source

    def _before_run(self, ctx):
        return tfv1.train.SessionRunArgs(fetches=None, feed_dict=self._source.next_feed())

    def __str__(self):
        return "FeedNext[{}]".format(self._source)


class FeedInput(InputSource):
    """Feed each step's inputs from a Python iterable of datapoints.

    Each datapoint is a list/tuple in the order of ``inputs()`` (or a dict keyed by input name).
    When the iterable runs out it is iterated again, so a list or any re-iterable object works
    for any number of epochs; its ``len()``, when it has one, is the default ``steps_per_epoch``.
    With several training towers, each tower is fed a datapoint of its own every step.

    Args:
        data (iterable): the datapoints, one batch each.

    Example:
        >>> batches = [(x[i:i + 32], y[i:i + 32]) for i in range(0, len(x), 32)]
        >>> TrainConfig(model=MyModel(), data=FeedInput(batches), max_epoch=5)
    """

    def __init__(self, data):
        try:
            iter(data)
        except TypeError:
            raise TypeError("FeedInput needs an iterable of datapoints, got {!r}.".format(data)) \
                from None
        self._data = data
        self._iterator = None
        self.placeholders = None
        self._tower_placeholders = []
        self._datapoints_fed = 0

    def _setup(self, input_signature):
        # Placeholders carry the inputs' own names, so callbacks find them as e.g. "x".
        self.placeholders = [tfv1.placeholder(s.dtype, s.shape, name=s.name or "input{}".format(i))
                             for i, s in enumerate(input_signature)]

    def _get_input_tensors(self):
        # Every call (one per training tower) gets placeholders of its own, fed its own datapoint.
        placeholders = self.placeholders
        if self._tower_placeholders:
            placeholders = [tfv1.placeholder(s.dtype, s.shape, name=s.name or "input{}".format(i))
                            for i, s in enumerate(self.input_signature)]
        self._tower_placeholders.append(placeholders)
        return placeholders

    def _get_callbacks(self):
        return [_FeedNext(self)]

    def size(self):
        try:
            return len(self._data)
        except TypeError:
            return None

    def _next_datapoint(self):
        if self._iterator is None:
            self._iterator = iter(self._data)
        try:
            return next(self._iterator)
        except StopIteration:
            self._iterator = iter(self._data)
            try:
                return next(self._iterator)
            except StopIteration:
                raise ValueError(
                    "FeedInput's data ran out after {} datapoints and yields nothing when iterated "
                    "again: pass a re-iterable (a list, or an object with __iter__) instead of a "
                    "one-shot generator.".format(self._datapoints_fed)) from None

    def next_feed(self):
        """The feed_dict for the next step: a datapoint of its own for each tower's placeholders."""
        feed = {}
        for placeholders in self._tower_placeholders or [self.placeholders]:
            feed.update(self._feed_for(self._next_datapoint(), self._datapoints_fed, placeholders))
            self._datapoints_fed += 1
        return feed

    def iter_feeds(self):
        """Yield the feed_dict of each datapoint of exactly one pass over the data (no repeat).

        Each call starts a new pass, e.g. for one validation run over the data.
        """
        for index, dp in enumerate(self._data):
            yield self._feed_for(dp, index)

    def _feed_for(self, dp, index, placeholders=None):
        placeholders = placeholders or self.placeholders
        if isinstance(dp, dict):
            missing = [s.name for s in self.input_signature if s.name not in dp]
            if missing:
                raise ValueError("FeedInput datapoint {} is a dict with keys {} but inputs() needs "
                                 "{}.".format(index, sorted(dp), missing))
            dp = [dp[s.name] for s in self.input_signature]
        elif not isinstance(dp, (list, tuple)) or len(dp) != len(self.placeholders):
            raise ValueError("FeedInput datapoint {} must be a list of {} components (one per input), "
                             "got {}.".format(index, len(self.placeholders),
                                              type(dp).__name__ if not isinstance(dp, (list, tuple))
                                              else "{} component(s)".format(len(dp))))
        where = "FeedInput datapoint {}".format(index)
        return {ph: check_value_matches_spec(v, s, where)
                for ph, v, s in zip(placeholders, dp, self.input_signature)}
