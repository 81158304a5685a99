"""The callbacks and monitors every training run gets unless told otherwise."""
from tfloop.callbacks.graph import RunUpdateOps
from tfloop.callbacks.progress import ProgressBar
from tfloop.callbacks.summary import MergeAllSummaries, MovingAverageSummary
from tfloop.monitors.json_writer import JSONWriter
from tfloop.monitors.printer import ScalarPrinter
from tfloop.monitors.tfevent import TFEventWriter
from tfloop.train.passes import check_epochs_are_passes
from tfloop.utils import logger

__all__ = ["default_callbacks", "default_monitors", "DEFAULT_CALLBACKS", "DEFAULT_MONITORS",
           "default_callbacks_besides", "check_no_default_twice", "steps_per_epoch_of"]

_DEFAULT_KINDS = (MovingAverageSummary, ProgressBar, MergeAllSummaries, RunUpdateOps)


def default_callbacks():
    """Callbacks added to the user's list (replace them with ``extra_callbacks=``):
    ``MovingAverageSummary``, ``ProgressBar`` (showing the moving averages, the cost's among
    them), ``MergeAllSummaries``, ``RunUpdateOps``."""
    return [MovingAverageSummary(), ProgressBar(moving_averages=True), MergeAllSummaries(),
            RunUpdateOps()]


def _slot(cb):
    """What makes two default callbacks duplicates: the kind, and the collection it works on
    (``MergeAllSummaries(key="OFTEN")`` beside the default ``MergeAllSummaries()`` is a second
    callback, not a duplicate)."""
    kind = next(k for k in _DEFAULT_KINDS if isinstance(cb, k))
    return kind, getattr(cb, "collection", None)


def _is_default_kind(cb):
    return isinstance(cb, _DEFAULT_KINDS)


def default_callbacks_besides(callbacks):
    """The default callbacks of the kinds ``callbacks`` does not hold already.

    tensorpack's documentation lists the four defaults at the end of ``callbacks=`` (to show
    how to customize them) while leaving ``extra_callbacks`` alone: the user's instance takes the
    place of the default one instead of running twice (two progress bars, an EMA updated twice
    per step). Only a callback of the same kind on the same collection takes a default's place.

    Example:
        >>> [type(cb).__name__ for cb in default_callbacks_besides([ProgressBar(["cost"])])]
        ['MovingAverageSummary', 'MergeAllSummaries', 'RunUpdateOps']
    """
    kept = []
    for cb in default_callbacks():
        given = [c for c in callbacks if _is_default_kind(c) and _slot(c) == _slot(cb)]
        if given:
            logger.info(f"callbacks= holds {type(cb).__name__}, one of the default callbacks: it "
                        "takes the place of the default one.")
        else:
            kept.append(cb)
    return kept


def check_no_default_twice(callbacks):
    """Refuse two instances of one default callback kind on one collection in the final list
    (``callbacks`` + ``extra_callbacks``): they would both run (two progress bars, an EMA updated
    twice per step, summaries merged twice). Instances on different collections
    (``MergeAllSummaries(key="OFTEN")``) are different callbacks."""
    slots = {}
    for cb in callbacks:
        if _is_default_kind(cb):
            slots.setdefault(_slot(cb), {})[id(cb)] = cb
    for (kind, _), same in slots.items():
        found = list(same.values())
        if len(found) > 1:   # (one object listed twice is refused as such, later)
            raise ValueError(
                f"The callbacks hold {len(found)} {kind.__name__} callbacks "
                f"({', '.join(map(str, found))}): each would run, every step. Keep one: a default "
                "callback given in callbacks= replaces the default one when extra_callbacks is "
                "left out, so do not list it in extra_callbacks= as well.")


def default_monitors():
    """Monitor backends used when ``monitors=`` is not given: ``TFEventWriter``, ``JSONWriter``,
    ``ScalarPrinter``. Without a log directory the two file writers are skipped (one warning)."""
    return [TFEventWriter(), JSONWriter(), ScalarPrinter()]


DEFAULT_CALLBACKS = default_callbacks  # tensorpack's names
DEFAULT_MONITORS = default_monitors


def steps_per_epoch_of(source):
    """The default ``steps_per_epoch``: the size of the input ``source``, when it knows it; None
    when it does not but says where each pass over its data ends: then each epoch is one pass.

    Raises:
        ValueError: ``source`` is empty, repeats forever, or neither knows its size nor where its
            passes end (see :func:`~tfloop.train.passes.check_epochs_are_passes`).
    """
    size = source.size() if source is not None else None
    if size is not None:
        return size
    check_epochs_are_passes(source)
    return None
