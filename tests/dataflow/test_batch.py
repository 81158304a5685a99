"""Stacking datapoints into batches."""
import numpy as np
import pytest

from tfloop.dataflow import BatchData, BatchDataByShape, DataFromList


def numbers(n, shuffle=False):
    return DataFromList([[i, float(i)] for i in range(n)], shuffle=shuffle)


def test_batch_data_stacks_components_and_drops_the_remainder():
    df = BatchData(numbers(5), 2)
    df.reset_state()
    batches = list(df)
    assert len(df) == len(batches) == 2
    assert batches[0][0].dtype == np.int32 and batches[0][1].dtype == np.float32
    assert [b[0].tolist() for b in batches] == [[0, 1], [2, 3]]



def test_batch_data_remainder_and_use_list_and_dicts():
    df = BatchData(numbers(5), 2, remainder=True, use_list=True)
    df.reset_state()
    assert len(df) == 3
    assert [b[0] for b in df] == [[0, 1], [2, 3], [4]]
    dicts = BatchData(DataFromList([{"a": np.ones(2), "b": True}] * 2, shuffle=False), 2)
    batch = next(iter(dicts))
    assert batch["a"].shape == (2, 2) and batch["b"].dtype == bool



def test_batch_data_errors_name_the_problem():
    with pytest.raises(ValueError, match="batch_size=10 is larger than the DataFlow's length 5"):
        BatchData(numbers(5), 10)
    with pytest.raises(ValueError, match="BatchData: batch_size must be a positive int"):
        BatchData(numbers(5), 0)
    ragged = BatchData(DataFromList([[np.zeros(2)], [np.zeros(3)]], shuffle=False), 2)
    with pytest.raises(ValueError, match=r"different shapes \[\(2,\), \(3,\)\]"):
        list(ragged)
    with pytest.raises(TypeError, match="use_list=True"):
        list(BatchData(DataFromList([[object()]], shuffle=False), 1))
    with pytest.raises(TypeError, match="list, tuple or dict"):
        list(BatchData(DataFromList([5], shuffle=False), 1))



def test_batch_data_by_shape_groups_same_shapes():
    dps = [[np.full(n, i)] for i, n in enumerate([1, 2, 1, 3, 2])]
    df = BatchDataByShape(DataFromList(dps, shuffle=False), 2, idx=0)
    df.reset_state()
    out = list(df)
    assert [b[0].tolist() for b in out] == [[[0], [2]], [[1, 1], [4, 4]]]
