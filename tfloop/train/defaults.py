"""The callbacks and monitors every training run gets unless told otherwise."""
from tfloop.callbacks.graph import RunUpdateOps
from tfloop.callbacks.progress import ProgressBar
from tfloop.callbacks.summary import MergeAllSummaries, MovingAverageSummary
from tfloop.monitors.json_writer import JSONWriter
from tfloop.monitors.printer import ScalarPrinter
from tfloop.monitors.tfevent import TFEventWriter

__all__ = ["default_callbacks", "default_monitors", "DEFAULT_CALLBACKS", "DEFAULT_MONITORS"]


def default_callbacks():
    """Callbacks added to the user's list (replace them with ``extra_callbacks=``):
    ``MovingAverageSummary``, ``ProgressBar`` (showing the moving averages, the cost's among
    them), ``MergeAllSummaries``, ``RunUpdateOps``."""
    return [MovingAverageSummary(), ProgressBar(moving_averages=True), MergeAllSummaries(),
            RunUpdateOps()]


def default_monitors():
    """Monitor backends used when ``monitors=`` is not given: ``TFEventWriter``, ``JSONWriter``,
    ``ScalarPrinter``. Without a log directory the two file writers are skipped, with one warning."""
    return [TFEventWriter(), JSONWriter(), ScalarPrinter()]


DEFAULT_CALLBACKS = default_callbacks  # tensorpack's names
DEFAULT_MONITORS = default_monitors
