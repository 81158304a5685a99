"""DataFlows over files of other tools (tensorpack's ``dataflow.format``): HDF5, LMDB, Caffe's
LMDB of ``Datum`` records, and SVMlight text files."""
import struct

import numpy as np

from tfloop.dataflow.base import RNGDataFlow
from tfloop.dataflow.hdf5 import HDF5Data
from tfloop.dataflow.serialize import LMDBData, LMDBDataDecoder
from tfloop.utils import logger
from tfloop.utils.optional import require

__all__ = ["HDF5Data", "LMDBData", "LMDBDataDecoder", "CaffeLMDB", "SVMLightData"]


def _varint(buf, pos):
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _fields(buf):
    """``(field number, wire type, value)`` of each field of a protobuf message: varints as
    ints, the other wire types as their bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = bytes(buf[pos:pos + size]), pos + size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = bytes(buf[pos:pos + size]), pos + size
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated field")
        yield number, wire, value


def parse_caffe_datum(buf):
    """``[HWC image, label]`` of a serialized ``caffe.Datum``: uint8 from ``data``, float32 from
    ``float_data``, or decoded with OpenCV when ``encoded``."""
    ints, data, floats = {}, b"", []
    for number, wire, value in _fields(buf):
        if number == 4 and wire == 2:
            data = value
        elif number == 6:  # float_data: packed, or one fixed32 per field
            floats.extend(struct.unpack(f"<{len(value) // 4}f", value))
        elif wire == 0:
            ints[number] = value
    label = ints.get(5, 0)
    label = label - (1 << 64) if label >= 1 << 63 else label  # int32 -1 is a 10-byte varint
    if ints.get(7):
        cv2 = require("cv2", "datasets", "CaffeLMDB (for encoded images)")
        img = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
        if img is None:
            raise ValueError("the encoded image cannot be decoded")
        return [img, label]
    shape = (ints.get(1, 0), ints.get(2, 0), ints.get(3, 0))
    img = np.frombuffer(data, np.uint8) if data else np.asarray(floats, np.float32)
    return [img.reshape(shape).transpose(1, 2, 0), label]


def CaffeLMDB(lmdb_path, shuffle=True, keys=None):
    """``[HWC image, label]`` datapoints of a Caffe LMDB database, whose values are serialized
    ``caffe.Datum`` records (read without Caffe or protobuf). An entry that cannot be read is
    skipped with a warning naming its key. Caffe's format stores raw pixels, so it is large and
    slow; prefer :class:`LMDBSerializer` for new data.

    Args:
        lmdb_path, shuffle, keys: as in :class:`LMDBData` (``keys`` may be a format string such
            as ``"{:0>8d}"``).

    Example:
        >>> df = CaffeLMDB("/data/ilsvrc_val_lmdb", keys="{:0>8d}")  # doctest: +SKIP
    """
    def decode(key, value):
        try:
            return parse_caffe_datum(value)
        except (ValueError, struct.error) as e:
            logger.warn(f"CaffeLMDB: cannot read the Datum at key {key!r} ({e}); skipped.")
            return None

    return LMDBDataDecoder(LMDBData(lmdb_path, shuffle, keys), decode)


def load_svmlight(filename):
    """``(X, y)`` of an SVMlight file: a dense float64 ``(n, features)`` array and the labels.
    Feature indices are 1-based unless one of them is 0; ``qid:`` and ``#`` comments ignored."""
    labels, rows = [], []
    with open(filename, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            try:
                labels.append(float(tokens[0]))
                rows.append([(int(i), float(v)) for i, v in
                             (t.split(":", 1) for t in tokens[1:] if not t.startswith("qid:"))])
            except ValueError:
                raise ValueError(f"SVMLightData: {filename} line {number} is not "
                                 f"'<label> <index>:<value> ...': {line.strip()!r}.") from None
    indices = [i for row in rows for i, _ in row]
    offset = 0 if 0 in indices else 1
    X = np.zeros((len(rows), max(indices, default=offset - 1) + 1 - offset))
    for k, row in enumerate(rows):
        for i, v in row:
            X[k, i - offset] = v
    return X, np.asarray(labels)


class SVMLightData(RNGDataFlow):
    """``[X_i, y_i]`` datapoints of an SVMlight / libsvm file (``<label> <index>:<value> ...``
    per line): ``X_i`` a dense float64 feature vector, ``y_i`` its label.

    Args:
        filename (str): the file.
        shuffle (bool): a new order at each pass.

    Example:
        >>> df = SVMLightData("train.svm", shuffle=False)  # doctest: +SKIP
    """

    def __init__(self, filename, shuffle=True):
        self.X, self.y = load_svmlight(filename)
        self.shuffle = shuffle

    def __len__(self):
        return len(self.y)

    def __iter__(self):
        order = self.rng.permutation(len(self)) if self.shuffle else range(len(self))
        for k in order:
            yield [self.X[k], self.y[k]]
