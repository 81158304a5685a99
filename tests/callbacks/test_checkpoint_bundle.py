"""The checkpoint files written from numpy arrays are byte for byte those of TensorFlow's SaveV2,
and a data file is overwritten in place."""
import os

import numpy as np
import pytest

from tfloop.callbacks.checkpoint_bundle import (
    DATA_SUFFIX,
    INDEX_SUFFIX,
    writable_dtype,
    write_data,
    write_index,
)
from tfloop.compat import tf

DTYPES = [tf.float32, tf.float16, tf.bfloat16, tf.float64, tf.int64, tf.int8, tf.uint16, tf.bool,
          tf.complex64]
SHAPES = [[], [3], [2, 5], [0], [7, 1, 2]]


def tensors(count, name_length=12, seed=0):
    """``count`` named numpy arrays of every dtype and shape above, names in no sorted order."""
    rng = np.random.RandomState(seed)
    out = {}
    for i in range(count):
        dtype, shape = DTYPES[i % len(DTYPES)], SHAPES[i % len(SHAPES)]
        values = np.asarray(rng.rand(*shape)) * 10
        value = (values > 5) if dtype == tf.bool else values.astype(dtype.as_numpy_dtype)
        name = f"scope{i % 3}/v{(i * 7919) % count:05d}".ljust(name_length, "x")
        out[name] = (dtype, np.asarray(value))
    return out


def write_ours(prefix, named):
    names = sorted(named, key=str.encode)
    fd = os.open(prefix + DATA_SUFFIX, os.O_RDWR | os.O_CREAT)
    try:
        placed = write_data(fd, [named[n][1] for n in names])
    finally:
        os.close(fd)
    write_index(prefix + INDEX_SUFFIX,
                {n: (named[n][0], named[n][1].shape, p) for n, p in zip(names, placed)})


def write_tensorflows(prefix, named):
    """SaveV2 writes the data in the order of its names: give them sorted, as ours are."""
    names = sorted(named, key=str.encode)
    tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(named[n][1], dtype=named[n][0]) for n in names])


def read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("count,name_length", [(1, 12), (40, 12), (3000, 100)],
                         ids=["one tensor", "every dtype and shape", "an index of two blocks"])
def test_the_files_are_those_tensorflow_writes(tmp_path, count, name_length):
    named = tensors(count, name_length)
    write_ours(str(tmp_path / "ours"), named)
    write_tensorflows(str(tmp_path / "tf"), named)
    for suffix in (DATA_SUFFIX, INDEX_SUFFIX):
        assert read(tmp_path / ("ours" + suffix)) == read(tmp_path / ("tf" + suffix)), suffix
    reader = tf.train.load_checkpoint(str(tmp_path / "ours"))
    for name, (_, value) in named.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    if count == 3000:
        assert os.path.getsize(tmp_path / ("ours" + INDEX_SUFFIX)) > 262144     # 2 blocks


def test_a_data_file_is_overwritten_in_place_and_cut_to_length(tmp_path):
    prefix = str(tmp_path / "model")
    write_ours(prefix, {"big": (tf.float32, np.ones([1000], np.float32))})
    inode = os.stat(prefix + DATA_SUFFIX).st_ino
    small = {"a": (tf.float32, np.arange(3, dtype=np.float32)),
             "b": (tf.int64, np.array([7, 8], np.int64))}
    write_ours(prefix, small)
    assert os.stat(prefix + DATA_SUFFIX).st_ino == inode
    assert os.path.getsize(prefix + DATA_SUFFIX) == 12 + 16
    reader = tf.train.load_checkpoint(prefix)
    assert sorted(reader.get_variable_to_shape_map()) == ["a", "b"]
    for name, (_, value) in small.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)


def test_only_types_whose_bytes_are_their_values_are_written_here():
    assert all(writable_dtype(d) for d in DTYPES)
    assert not any(writable_dtype(d) for d in (tf.string, tf.variant, tf.resource))
