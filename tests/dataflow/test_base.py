"""The DataFlow protocol, its base classes, and tfloop.dataflow working without TensorFlow."""
import ast
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from support import scaled_timeout

import tfloop
import tfloop.dataflow as dataflow
from tfloop.dataflow import (
    DataFlow,
    DataFlowReentrantGuard,
    DataFlowTerminated,
    ProxyDataFlow,
    RNGDataFlow,
    fix_rng_seed,
    get_rng,
)

PACKAGE = os.path.dirname(dataflow.__file__)
ROOT = os.path.dirname(os.path.dirname(PACKAGE))


class Count(DataFlow):
    def __init__(self, n):
        self.n = n
        self.resets = 0

    def __iter__(self):
        for i in range(self.n):
            yield [i]

    def __len__(self):
        return self.n

    def reset_state(self):
        self.resets += 1


class OldStyle(DataFlow):
    def get_data(self):
        yield [1]

    def size(self):
        return 1


def test_dataflow_is_abstract_and_has_no_length_by_default():
    with pytest.raises(TypeError):
        DataFlow()

    class Endless(DataFlow):
        def __iter__(self):
            yield [0]
    with pytest.raises(NotImplementedError, match="Endless has no length"):
        len(Endless())


def test_old_method_names_map_to_iter_and_len():
    df = OldStyle()
    assert list(df) == [[1]] and len(df) == 1
    new = Count(2)
    assert list(new.get_data()) == [[0], [1]] and new.size() == 2


def test_proxy_forwards_everything():
    inner = Count(3)
    proxy = ProxyDataFlow(inner)
    proxy.reset_state()
    assert inner.resets == 1 and len(proxy) == 3 and list(proxy) == [[0], [1], [2]]


def test_rng_dataflow_gets_a_fresh_rng_on_reset():
    class Draw(RNGDataFlow):
        def __iter__(self):
            yield [self.rng.randint(1 << 30)]
    a, b = Draw(), Draw()
    a.reset_state()
    b.reset_state()
    assert isinstance(a.rng, np.random.RandomState)
    assert list(a) != list(b)


def test_fixed_seed_makes_rngs_repeat_and_can_be_unfixed():
    fix_rng_seed(3)
    try:
        assert get_rng().randint(1 << 30) == get_rng().randint(1 << 30)
    finally:
        fix_rng_seed(None)
    assert get_rng().randint(1 << 30) != get_rng().randint(1 << 30)
    with pytest.raises(TypeError, match="fix_rng_seed needs an int"):
        fix_rng_seed("three")     # tensorpack's int() takes "3", not this


def test_reentrant_guard_refuses_a_second_iteration():
    guard = DataFlowReentrantGuard()
    with guard:
        with pytest.raises(threading.ThreadError, match="not reentrant"):
            with guard:
                pass
    with guard:  # released after the first
        pass


def test_dataflow_terminated_is_not_an_ordinary_exception():
    assert issubclass(DataFlowTerminated, BaseException)
    assert not issubclass(DataFlowTerminated, Exception)


def test_no_module_of_the_package_imports_tensorflow_at_import_time():
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            tree = ast.parse(open(path, encoding="utf-8").read())
            for node in tree.body:  # module level only: TFRecordSerializer imports in a method
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                else:
                    continue
                for imported in names:
                    assert not imported.startswith(("tensorflow", "tfloop.compat")), \
                        (path, imported)


def test_the_package_works_where_tensorflow_cannot_be_imported(tmp_path):
    code = f"""
import importlib.abc, sys, types
class NoTF(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] == 'tensorflow':
            raise ImportError('no tensorflow here')
sys.meta_path.insert(0, NoTF())
pkg = types.ModuleType('tfloop'); pkg.__path__ = [{os.path.join(ROOT, 'tfloop')!r}]
sys.modules['tfloop'] = pkg
from tfloop.dataflow import BatchData, DataFromList, MultiProcessMapData, imgaug, dataset
df = BatchData(DataFromList([[i] for i in range(4)], shuffle=False), 2)
df.reset_state()
mp = MultiProcessMapData(DataFromList([[1], [2]], shuffle=False), 2, lambda dp: [dp[0] + 1],
                         strict=True)
mp.reset_state()
print([b[0].tolist() for b in df], list(mp), 'tensorflow' in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=scaled_timeout(20))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[[0, 1], [2, 3]] [[2], [3]] False"


def test_package_exports_tensorpack_names_and_submodules():
    for name in ["DataFlow", "RNGDataFlow", "ProxyDataFlow", "DataFromList", "DataFromGenerator",
                 "DataFromIterable", "FakeData", "BatchData", "BatchDataByShape", "MapData",
                 "MapDataComponent", "SelectComponent", "RepeatedData", "RepeatedDataPoint",
                 "FixedSizeData", "LocallyShuffleData", "ConcatData", "JoinData", "RandomMixData",
                 "RandomChooseData", "CacheData", "PrintData", "TestDataSpeed",
                 "MultiThreadMapData", "MultiProcessMapData", "MultiProcessMapDataZMQ",
                 "MultiProcessMapAndBatchData", "MultiProcessRunner", "MultiProcessRunnerZMQ",
                 "MultiThreadRunner", "PrefetchData", "PrefetchDataZMQ",
                 "MultiProcessPrefetchData", "LMDBSerializer", "NumpySerializer",
                 "TFRecordSerializer", "AugmentImageComponent", "AugmentImageComponents",
                 "AugmentImageCoordinates", "dataset", "imgaug"]:
        assert name in dataflow.__all__, name
        assert getattr(tfloop, name) is getattr(dataflow, name), name
    assert tfloop.dataflow.dataset.Mnist is dataflow.dataset.Mnist
    assert tfloop.dataflow.imgaug.Flip is dataflow.imgaug.Flip
