"""A ``tf.data.Dataset`` of a DataFlow's datapoints (tensorpack's
``TFDatasetInput.dataflow_to_dataset``), each component converted to its dtype by the rule of
:mod:`tfloop.input.casting` (floats for an integer dtype only when whole and in range, integers
for a narrower integer dtype only when in range)."""
import numpy as np

from tfloop.compat import tf
from tfloop.input.casting import (
    INTEGRAL,
    NARROWING,
    UNSAFE,
    cast_kind,
    check_integer_range,
    check_integral_values,
)
from tfloop.input.loader import check_iterable, reset_data

__all__ = ["dataflow_to_dataset"]


def _component(value, dtype, where, index):
    arr = np.asarray(value)
    kind = cast_kind(arr.dtype, dtype)
    if kind == UNSAFE:
        raise ValueError(f"{where}: got dtype {arr.dtype} for component {index}: {dtype.name}.")
    if kind == INTEGRAL:
        return check_integral_values(arr, dtype, where, f"component {index}: {dtype.name}")
    if kind == NARROWING:
        return check_integer_range(arr, dtype, where, f"component {index}: {dtype.name}")
    return arr.astype(dtype.as_numpy_dtype, copy=False)


def dataflow_to_dataset(df, types):
    """A ``tf.data.Dataset`` yielding the datapoints of ``df`` (reset here), one component per
    dtype of ``types``. Finite when ``df`` is: repeat it for training (``DatasetInput`` does).

    Args:
        df: a DataFlow (or any re-iterable) of datapoints, each a list of components.
        types (list[tf.DType]): the dtype of each component.

    Raises:
        ValueError, when the dataset is read: a datapoint with another number of components,
            or a value its dtype cannot take (a string for a number; a float for an integer
            dtype that is not a whole number in range; an integer out of a narrower integer
            dtype's range), naming the datapoint and component.

    Example:
        >>> ds = DatasetInput.dataflow_to_dataset(BatchData(df, 32), [tf.float32, tf.int32])
        >>> TrainConfig(model=M(), data=DatasetInput(ds), steps_per_epoch=100)
    """
    check_iterable(df, "dataflow_to_dataset")
    if not isinstance(types, (list, tuple)) or not types:
        raise TypeError(f"dataflow_to_dataset: types must be a list of tf.DType, one per "
                        f"component, got {types!r}.")
    types = [tf.as_dtype(t) for t in types]
    reset_data(df)

    def generate():
        for index, dp in enumerate(df):
            if len(dp) != len(types):
                raise ValueError(f"dataflow_to_dataset datapoint {index} has {len(dp)} "
                                 f"components, but types has {len(types)}.")
            yield tuple(_component(v, t, f"dataflow_to_dataset datapoint {index}", i)
                        for i, (v, t) in enumerate(zip(dp, types)))

    return tf.data.Dataset.from_generator(
        generate, output_signature=tuple(tf.TensorSpec(None, t) for t in types))
