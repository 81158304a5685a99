"""TensorFlow's checkpoint files (the V2 "tensor bundle") written from numpy arrays, the data file
overwritten in place.

A checkpoint ``prefix`` is two files: ``prefix.data-00000-of-00001``, the tensors' bytes one after
the other, and ``prefix.index``, a sorted table (LevelDB's table format, uncompressed) that maps
``""`` to a ``BundleHeaderProto`` and each tensor's name to a ``BundleEntryProto`` (dtype, shape,
offset and size in the data file, masked CRC-32C of the bytes). TensorFlow's ``SaveV2`` writes a
new data file at every save; :func:`write_data` writes into an existing file instead, so that the
pages the operating system holds for it are reused rather than freed and allocated again.
:func:`write_index` writes the index byte for byte as TensorFlow's ``BundleWriter`` does.
"""
import os
import struct

import numpy as np
from tensorflow.core.framework import versions_pb2
from tensorflow.core.protobuf import tensor_bundle_pb2

from tfloop.compat import tf

try:
    import google_crc32c
except ImportError:     # a requirement of tfloop; without it, TensorFlow's writer writes
    google_crc32c = None

__all__ = ["DATA_SUFFIX", "INDEX_SUFFIX", "fast_crc32c", "writable_dtype", "write_data",
           "write_index"]

DATA_SUFFIX = ".data-00000-of-00001"
INDEX_SUFFIX = ".index"
# The table's layout, as TensorFlow's table builder makes it.
_BLOCK_SIZE = 262144
_RESTART_INTERVAL = 16
_MAGIC = 0xdb4775248b80fb57
_HANDLE_SPACE = 40      # two block handles of at most 20 bytes each, zero-padded
_CHUNK = 4 << 20        # bytes checksummed and written per call


def fast_crc32c():
    """Whether CRC-32C is computed in C here (``google-crc32c``'s extension): the writer needs it
    (its pure Python fallback would take minutes per gigabyte)."""
    return google_crc32c is not None and google_crc32c.implementation == "c"


def writable_dtype(dtype):
    """Whether tensors of ``dtype`` are written here: types whose bytes are their values
    (numbers, bool), not strings, variants or resources."""
    dtype = tf.as_dtype(dtype).base_dtype
    return dtype.is_floating or dtype.is_integer or dtype.is_complex or dtype == tf.bool


def _mask(crc):
    return (((crc >> 15) | (crc << 17)) + 0xa282ead8) & 0xffffffff


def write_data(fd, arrays):
    """Write ``arrays`` one after the other from the start of file ``fd`` (overwriting in place,
    then cutting the file to their length); return ``(offset, size, masked crc32c)`` of each."""
    placed, offset = [], 0
    for array in arrays:
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        crc = 0
        for start in range(0, data.size, _CHUNK):
            chunk = data[start:start + _CHUNK]
            crc = google_crc32c.extend(crc, chunk)
            written = 0
            while written < chunk.size:
                written += os.pwrite(fd, chunk[written:], offset + start + written)
        placed.append((offset, data.size, _mask(crc)))
        offset += data.size
    os.ftruncate(fd, offset)
    return placed


def _varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7f) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _shared_prefix(a, b):
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _Block:
    """A block of sorted key/value entries, keys prefix-compressed between restart points."""

    def __init__(self, restart_interval):
        self.interval = restart_interval
        self.buffer, self.restarts, self.counter, self.last = bytearray(), [0], 0, b""

    def add(self, key, value):
        shared = 0
        if self.counter < self.interval:
            shared = _shared_prefix(self.last, key)
        else:
            self.restarts.append(len(self.buffer))
            self.counter = 0
        self.buffer += _varint(shared) + _varint(len(key) - shared) + _varint(len(value))
        self.buffer += key[shared:] + value
        self.last, self.counter = key, self.counter + 1

    def size_estimate(self):
        return len(self.buffer) + 4 * len(self.restarts) + 4

    def finish(self):
        return bytes(self.buffer) + struct.pack(f"<{len(self.restarts) + 1}I", *self.restarts,
                                                len(self.restarts))


def _separator(start, limit):
    """A short key >= ``start`` and < ``limit`` (the table builder's index key)."""
    i = _shared_prefix(start, limit)
    if i < min(len(start), len(limit)) and start[i] < 0xff and start[i] + 1 < limit[i]:
        return start[:i] + bytes([start[i] + 1])
    return start


def _successor(key):
    """A short key >= ``key`` (the index key of the last block)."""
    for i, byte in enumerate(key):
        if byte != 0xff:
            return key[:i] + bytes([byte + 1])
    return key


class _Table:
    def __init__(self):
        self.out, self.data = bytearray(), _Block(_RESTART_INTERVAL)
        self.index, self.pending, self.last = _Block(1), None, b""

    def _write_block(self, block):
        raw = block.finish()
        handle = _varint(len(self.out)) + _varint(len(raw))
        crc = google_crc32c.extend(google_crc32c.value(raw), b"\0")
        self.out += raw + b"\0" + struct.pack("<I", _mask(crc))
        return handle

    def add(self, key, value):
        if self.pending is not None:
            self.index.add(_separator(self.last, key), self.pending)
            self.pending = None
        self.data.add(key, value)
        self.last = key
        if self.data.size_estimate() >= _BLOCK_SIZE:
            self._flush()

    def _flush(self):
        if self.data.buffer:
            self.pending = self._write_block(self.data)
            self.data = _Block(_RESTART_INTERVAL)

    def finish(self):
        self._flush()
        metaindex = self._write_block(_Block(_RESTART_INTERVAL))
        if self.pending is not None:
            self.index.add(_successor(self.last), self.pending)
        index = self._write_block(self.index)
        footer = (metaindex + index).ljust(_HANDLE_SPACE, b"\0")
        return bytes(self.out) + footer + struct.pack("<Q", _MAGIC)


def write_index(path, tensors):
    """Write the index of a bundle to ``path`` (a new file): ``tensors`` maps each name to
    ``(dtype, shape, (offset, size, masked crc32c))`` of its bytes in the data file."""
    header = tensor_bundle_pb2.BundleHeaderProto(
        num_shards=1, endianness=tensor_bundle_pb2.BundleHeaderProto.LITTLE,
        version=versions_pb2.VersionDef(producer=1))
    table = _Table()
    table.add(b"", header.SerializeToString())
    for name in sorted(tensors, key=lambda n: n.encode()):
        dtype, shape, (offset, size, crc) = tensors[name]
        entry = tensor_bundle_pb2.BundleEntryProto(
            dtype=tf.as_dtype(dtype).as_datatype_enum, shape=tf.TensorShape(shape).as_proto(),
            offset=offset, size=size, crc32c=crc)
        table.add(name.encode(), entry.SerializeToString())
    with open(path, "wb") as f:
        f.write(table.finish())
