"""The deterministic flows at tensorpack's paths give tensorpack 0.11's datapoints."""
import importlib

import numpy as np
import pytest

import tfloop.dataflow as ours

theirs = pytest.importorskip("tensorpack.dataflow",
                             reason="tensorpack 0.11 (the test extra) is not installed")


def _points(df):
    df.reset_state()
    return repr(list(df))


def _source(m, n=7):
    return m.DataFromList([[np.full((2,), i, np.float32), i, f"x{i}"] for i in range(n)],
                          shuffle=False)


def _common(m):
    return importlib.import_module(f"{m.__name__}.common")


def _dicts(m):
    return m.DataFromList([{"a": np.zeros(2) + i, "b": i} for i in range(5)], shuffle=False)


FLOWS = {
    "BatchData": lambda m: _common(m).BatchData(_source(m), 3),
    "BatchData-remainder": lambda m: _common(m).BatchData(_source(m), 3, remainder=True),
    "BatchData-use_list": lambda m: _common(m).BatchData(_source(m), 3, use_list=True),
    "BatchData-both": lambda m: _common(m).BatchData(_source(m), 3, remainder=True, use_list=True),
    "BatchData-dicts": lambda m: _common(m).BatchData(_dicts(m), 2),
    "BatchDataByShape": lambda m: _common(m).BatchDataByShape(_source(m, 5), 2, 0),
    "JoinData": lambda m: _common(m).JoinData([_source(m, 4), _source(m, 4)]),
    "ConcatData": lambda m: _common(m).ConcatData([_source(m, 2), _source(m, 3)]),
    "SelectComponent": lambda m: _common(m).SelectComponent(_source(m, 3), [2, 0]),
    "RepeatedDataPoint": lambda m: _common(m).RepeatedDataPoint(_source(m, 2), 2),
    "MapDataComponent": lambda m: _common(m).MapDataComponent(_source(m, 3), lambda x: x * 2, 0),
}


@pytest.mark.parametrize("name", sorted(FLOWS))
def test_same_datapoints_and_length_as_tensorpack(name):
    mine, reference = FLOWS[name](ours), FLOWS[name](theirs)
    assert len(mine) == len(reference)
    assert _points(mine) == _points(reference)


def test_svmlight_data_as_tensorpack(tmp_path):
    pytest.importorskip("sklearn")
    path = tmp_path / "data.svm"
    path.write_text("1 1:0.5 3:2\n-1 2:1.5\n2 1:1 4:4\n")
    reference = importlib.import_module("tensorpack.dataflow.format")
    mine = ours.format.SVMLightData(str(path), shuffle=False)
    assert _points(mine) == _points(reference.SVMLightData(str(path), shuffle=False))
