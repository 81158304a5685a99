"""Input sources: where each step's input tensors come from."""
from tfloop.input.base import InputSource
from tfloop.input.dataset import DatasetInput
from tfloop.input.dummy import DummyConstantInput
from tfloop.input.feed import FeedInput
from tfloop.input.queue import BatchQueueInput, QueueInput

__all__ = [
    "InputSource", "DatasetInput", "DummyConstantInput", "FeedInput", "QueueInput",
    "BatchQueueInput",
]
