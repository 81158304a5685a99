"""TensorPrinter: log the values of some tensors after every step."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tfv1
from tfloop.utils import logger
from tfloop.utils.checks import check_names

__all__ = ["TensorPrinter"]


class TensorPrinter(Callback):
    """Fetch tensors along with every training step and log ``<name>: <value>`` for each.

    The values come from the step's own ``session.run`` (no extra run). For large tensors or
    frequent printing, ``tf.print`` inside the graph is cheaper.

    Args:
        names (list[str]): tensor names, in the graph or in the first training tower.

    Example:
        >>> callbacks = [PeriodicCallback(TensorPrinter(["cost", "learning_rate"]),
        ...                               every_k_steps=100)]
    """

    def __init__(self, names):
        self._names = check_names(names, "TensorPrinter")

    def _setup_graph(self):
        self._fetches = tfv1.train.SessionRunArgs(
            fetches=self.get_tensors_maybe_in_tower(self._names))

    def _before_run(self, ctx):
        return self._fetches

    def _after_run(self, ctx, values):
        for name, value in zip(self._names, values.results):
            logger.info(f"{name}: {value}")

    def __str__(self):
        return f"TensorPrinter({self._names})"
