"""Input sources: where each step's input tensors come from."""
from tfloop.input.base import InputSource, UnsavedPosition
from tfloop.input.batch_queue import BatchQueueInput
from tfloop.input.data_service import DataServiceCluster, DataServiceInput
from tfloop.input.dataset import DatasetInput
from tfloop.input.dummy import DummyConstantInput
from tfloop.input.feed import FeedInput
from tfloop.input.graph_dataset import as_graph_dataset
from tfloop.input.queue import QueueInput
from tfloop.input.staging import StagingInput
from tfloop.input.zmq_input import ZMQInput

__all__ = [
    "InputSource", "DatasetInput", "DummyConstantInput", "FeedInput", "QueueInput",
    "BatchQueueInput", "StagingInput", "DataServiceInput", "DataServiceCluster",
    "as_graph_dataset", "ZMQInput", "UnsavedPosition",
]
