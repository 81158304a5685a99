"""BatchQueueInput: a :class:`~tfloop.input.queue.QueueInput` for data of single examples, batched
in the graph by the queue's ``dequeue_many``."""
from tfloop.compat import tf, tfv1
from tfloop.input.base import describe_spec
from tfloop.input.loader import data_length
from tfloop.input.queue import QueueInput
from tfloop.utils.checks import check_int, is_int
from tfloop.utils.coerce import tensorpack_int, tensorpack_keywords

__all__ = ["BatchQueueInput"]


class BatchQueueInput(QueueInput):
    """Like :class:`QueueInput` for data of single examples: the loader thread enqueues examples
    into a TensorFlow queue and each step dequeues ``batch_size`` of them as one batch.

    Every input's shape, apart from the batch dimension, must be fully defined. Each example
    costs the loader thread a session call: for small examples, batching in Python (e.g. a
    DataFlow's ``BatchData``) with :class:`QueueInput` is faster.

    Args:
        df: a DataFlow or re-iterable of single examples (the inputs without the batch dimension).
        batch_size (int): examples per batch.
        queue (tf.queue.QueueBase or callable): defaults to a ``FIFOQueue`` of 3000 examples
            (with shapes, as ``dequeue_many`` needs).

    Example:
        >>> examples = [(x[i], y[i]) for i in range(len(x))]
        >>> TrainConfig(model=MyModel(), data=BatchQueueInput(examples, 64), max_epoch=5)
    """

    name = "BatchQueueInput"
    default_capacity = 3000

    @tensorpack_keywords(ds="df")
    def __init__(self, df, batch_size, queue=None):
        batch_size = check_int(tensorpack_int(batch_size, "BatchQueueInput's batch_size"),
                               "BatchQueueInput's batch_size", at_least=1)
        if is_int(queue):
            raise TypeError(f"BatchQueueInput needs a TensorFlow queue (it dequeues batches in the "
                            f"graph): pass a tf.queue.QueueBase or a function that builds one, "
                            f"not {queue!r}.")
        super().__init__(df, queue)
        self.batch_size = batch_size

    def _component_specs(self, input_signature):
        specs = []
        for spec in input_signature:
            shape = spec.shape
            if shape.rank is None or shape.rank < 1 or not shape[1:].is_fully_defined():
                raise ValueError(f"BatchQueueInput needs every input's shape fully defined apart "
                                 f"from the batch dimension; input {describe_spec(spec)} is not.")
            specs.append(tf.TensorSpec(shape[1:], spec.dtype, spec.name))
        return specs

    def _default_queue(self, specs):
        return tfv1.FIFOQueue(self.default_capacity, [s.dtype for s in specs],
                              shapes=[s.shape for s in specs], name="queue")

    def _dequeue(self):
        tensors = self.queue.dequeue_many(self.batch_size, name="dequeue")
        return [tensors] if isinstance(tensors, tf.Tensor) else list(tensors)

    def _datapoints_per_dequeue(self):
        return self.batch_size

    def size(self):
        n = data_length(self.data)
        return None if n is None else n // self.batch_size
