"""TensorPrinter: log the values of some tensors after every step."""
from tfloop.callbacks.graph import ProcessTensors
from tfloop.utils import logger
from tfloop.utils.checks import check_names

__all__ = ["TensorPrinter"]


class TensorPrinter(ProcessTensors):
    """Fetch tensors along with every training step and log ``<name>: <value>`` for each.

    A :class:`ProcessTensors` whose function logs: the values come from the step's own
    ``session.run`` (no extra run). For large tensors or frequent printing, ``tf.print`` inside
    the graph is cheaper.

    Args:
        names (list[str]): tensor names, in the graph or in the first training tower.

    Example:
        >>> callbacks = [PeriodicCallback(TensorPrinter(["cost", "learning_rate"]),
        ...                               every_k_steps=100)]
    """

    def __init__(self, names):
        super().__init__(check_names(names, "TensorPrinter"), self._log)

    def _log(self, *values):
        for name, value in zip(self._names, values):
            logger.info(f"{name}: {value}")

    def __str__(self):
        return f"TensorPrinter({self._names})"
