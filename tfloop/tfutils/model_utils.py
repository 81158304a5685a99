"""Describing and reading a model's variables."""
from typing import Any

import numpy as np
from tabulate import tabulate

from tfloop.compat import tfv1
from tfloop.tfutils.varmanip import is_optimizer_slot
from tfloop.utils import logger

__all__ = ["describe_trainable_vars", "read_model_weights"]


def get_shape_str(tensors):
    """The static shape of a tensor, or of each tensor of a list (comma-separated), as text, as
    tensorpack's layers log it.

    Example:
        >>> get_shape_str([image, label])
        '[None, 28, 28, 1],[None]'
    """
    if isinstance(tensors, (list, tuple)):
        return ",".join(get_shape_str(t) for t in tensors)
    return str(tensors.shape.as_list() if tensors.shape.rank is not None else None)


def describe_trainable_vars(graph=None):
    """Log a table of the trainable variables (name, shape, size, device, dtype) with totals."""
    graph = graph or tfv1.get_default_graph()
    variables = graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)
    if not variables:
        logger.info("The model has no trainable variables.")  # a NoOpTrainer needs none
        return None
    rows = []
    total_size = total_bytes = 0
    for v in variables:
        shape = v.shape.as_list()
        size = int(np.prod(shape)) if v.shape.is_fully_defined() else 0
        total_size += size
        total_bytes += size * v.dtype.base_dtype.size
        rows.append([v.op.name, shape, size, v.device or "-", v.dtype.base_dtype.name])
    table = tabulate(rows, headers=["name", "shape", "size", "device", "dtype"])
    summary = (f"Number of trainable variables: {len(variables)}\n"
               f"Number of parameters: {total_size} ({total_bytes / 2.0 ** 20:.2f} MB)")
    logger.detail("Trainable variables:\n" + table + "\n" + summary)
    return table


def _is_numeric(variable):
    dtype = variable.dtype.base_dtype
    return dtype.is_floating or dtype.is_integer or dtype.is_bool


def read_model_weights(sess: Any, graph: Any) -> dict[str, np.ndarray]:
    """``{variable name: value}`` of the graph's global variables, as a checkpoint names them,
    without the optimizer's slots (``w/Adam``, ``beta1_power``), which no prediction reads."""
    variables = [v for v in graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)
                 if _is_numeric(v) and not is_optimizer_slot(v.op.name)]
    values = sess.run(variables)
    return {v.op.name: np.asarray(value) for v, value in zip(variables, values)}
