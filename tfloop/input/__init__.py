"""Input sources: where each step's input tensors come from."""
# callbacks/ imports input/dataset.py (the inference runner); loading it first lets
# `import tfloop.input` (e.g. `python -m tfloop.input.data_service`) start here without a cycle.
import tfloop.callbacks  # noqa: F401  isort: skip
from tfloop.input.base import InputSource
from tfloop.input.data_service import DataServiceCluster, DataServiceInput
from tfloop.input.dataset import DatasetInput
from tfloop.input.dummy import DummyConstantInput
from tfloop.input.feed import FeedInput
from tfloop.input.graph_dataset import as_graph_dataset
from tfloop.input.queue import BatchQueueInput, QueueInput
from tfloop.input.staging import StagingInput

__all__ = [
    "InputSource", "DatasetInput", "DummyConstantInput", "FeedInput", "QueueInput",
    "BatchQueueInput", "StagingInput", "DataServiceInput", "DataServiceCluster",
    "as_graph_dataset",
]
