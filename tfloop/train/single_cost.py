"""tensorpack's QueueInput-only SimpleTrainer; :class:`SingleCostTrainer`, tensorpack's base
class for writing a trainer, lives in :mod:`tfloop.train.tower` (tensorpack's path) and is
re-exported here."""
from tfloop.input.queue import QueueInput
from tfloop.train.tower import SimpleTrainer, SingleCostTrainer

__all__ = ["SingleCostTrainer", "QueueInputTrainer"]


class QueueInputTrainer(SimpleTrainer):
    """A :class:`SimpleTrainer` that accepts only a :class:`QueueInput` (tensorpack kept it for
    type checks; ``SimpleTrainer`` trains from a ``QueueInput`` just as well).

    Example:
        >>> launch_train_with_config(TrainConfig(model=M(), data=QueueInput(df)),
        ...                          QueueInputTrainer())
    """

    def _setup_graph(self, input, get_cost_fn, get_opt_fn):
        if not isinstance(input, QueueInput):
            raise TypeError(f"QueueInputTrainer trains from a QueueInput, got {input!r}; use "
                            f"SimpleTrainer for other input sources.")
        return super()._setup_graph(input, get_cost_fn, get_opt_fn)
