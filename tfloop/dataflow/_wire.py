"""How a datapoint crosses a ZMQ socket (:mod:`tfloop.dataflow.remote`, ``ZMQInput``).

Three formats, named as ``send_dataflow_zmq``'s ``format`` names them:

* ``None``, tfloop's data format: a header frame (:data:`MAGIC` and the datapoint's structure
  as JSON) and one frame per array or bytes buffer. It carries lists, tuples, dicts, numpy arrays
  and scalars, bytes, str, int, float, bool and None; decoding builds only these (arrays of
  dtypes without Python objects) and so never runs code, whoever sent the message.
* ``"zmq_ops"`` (or ``"zmq_op"``): one frame in the layout of tensorpack's zmq_ops library, a
  list of arrays: ``[count int32]`` then, per array, ``[TF dtype enum int32][ndim int32]
  [dims int32 ...][nbytes int64][bytes]``, native byte order. Data only too.
* ``"pickle"``: one pickled frame, tensorpack's default. Unpickling runs whatever code the
  sender chose: use it only when every process that can reach the socket is trusted.

A receiver in the default mode reads both data formats (told apart by :data:`MAGIC`).
"""
import json
import math
import pickle
import struct

import numpy as np

__all__ = ["FORMATS", "decode", "encode"]

MAGIC = b"tfloop-datapoint/1\n"
FORMATS = (None, "zmq_op", "zmq_ops", "pickle")
PICKLE_HINT = ("format='pickle' on both ends sends any Python object, but the receiver then runs "
               "whatever code a sender puts in a message: use it only on a socket no untrusted "
               "process can reach (docs/security.md)")

# TensorFlow's DataType enum (tensorflow/core/framework/types.proto), as zmq_ops writes it.
_TF_ENUMS = {
    "float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6, "complex64": 8,
    "int64": 9, "bool": 10, "uint16": 17, "complex128": 18, "float16": 19, "uint32": 22,
    "uint64": 23,
}
_TF_DTYPES = {enum: np.dtype(name) for name, enum in _TF_ENUMS.items()}


def check_format(format, owner):
    if format not in FORMATS:
        raise ValueError(f"{owner}: format must be one of {list(FORMATS)}, got {format!r}.")
    return format


def encode(dp, format=None):
    """The frames of datapoint ``dp`` in ``format``."""
    if format == "pickle":
        return [pickle.dumps(dp, protocol=pickle.HIGHEST_PROTOCOL)]
    if format is None:
        buffers = []
        tree = _encode_tree(dp, buffers)
        return [MAGIC + json.dumps(tree, separators=(",", ":")).encode()] + buffers
    return [_encode_arrays(dp)]


def _encode_tree(obj, buffers):
    if isinstance(obj, (np.ndarray, np.generic)):
        arr = _contiguous(obj)
        if arr.dtype.hasobject or arr.dtype.fields is not None:
            raise TypeError(f"an array of dtype {arr.dtype} cannot be sent as data; "
                            f"{PICKLE_HINT}.")
        buffers.append(arr.data if arr.nbytes else b"")
        return {"array": len(buffers) - 1, "dtype": arr.dtype.str, "shape": list(arr.shape),
                "scalar": isinstance(obj, np.generic)}
    if isinstance(obj, (bytes, bytearray)):
        buffers.append(bytes(obj))
        return {"bytes": len(buffers) - 1}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    if isinstance(obj, (list, tuple)):
        return {type(obj).__name__ if type(obj) in (list, tuple) else "list":
                [_encode_tree(x, buffers) for x in obj]}
    if isinstance(obj, dict):
        return {"dict": [[_encode_tree(k, buffers), _encode_tree(v, buffers)]
                         for k, v in obj.items()]}
    raise TypeError(f"a {type(obj).__name__} cannot be sent as data (lists, tuples, dicts, numpy "
                    f"arrays, bytes, str, numbers, bool and None can); {PICKLE_HINT}.")


def _contiguous(value):
    arr = np.asarray(value)
    return arr if arr.flags.c_contiguous else arr.copy(order="C")


def _encode_arrays(dp):
    if not isinstance(dp, (list, tuple)):
        raise TypeError(f"format='zmq_ops' sends a list of arrays, got a {type(dp).__name__}.")
    parts = [struct.pack("=i", len(dp))]
    for component in dp:
        if isinstance(component, float):
            component = np.float32(component)
        elif isinstance(component, int) and not isinstance(component, bool):
            component = np.int32(component)
        arr = _contiguous(component)
        enum = _TF_ENUMS.get(arr.dtype.name)
        if enum is None:
            raise TypeError(f"format='zmq_ops' cannot send an array of dtype {arr.dtype}; it "
                            f"sends {sorted(_TF_ENUMS)}.")
        parts.append(struct.pack(f"=ii{arr.ndim}iq", enum, arr.ndim, *arr.shape, arr.nbytes))
        parts.append(arr.tobytes())
    return b"".join(parts)


def decode(frames, format=None):
    """The datapoint in the received ``frames`` (bytes-like); ``format`` is None (either data
    format) or ``"pickle"``. Raises ValueError for a message in neither."""
    first = memoryview(frames[0])
    if format == "pickle":
        return pickle.loads(first)
    try:
        if bytes(first[:len(MAGIC)]) == MAGIC:
            return _decode_tree(json.loads(bytes(first[len(MAGIC):])), frames[1:])
        if len(frames) != 1:
            raise ValueError(f"{len(frames)} frames without tfloop's header")
        return _decode_arrays(first)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError, struct.error) as e:
        raise ValueError(f"a received message is not a datapoint in tfloop's data formats "
                         f"({type(e).__name__}: {e}). A sender with format='pickle' needs a "
                         f"receiver with format='pickle'; {PICKLE_HINT}.") from None


def _decode_tree(node, buffers):
    if not isinstance(node, dict) or len(node) not in (1, 4):
        raise ValueError(f"unexpected node {str(node)[:80]}")
    if "value" in node:
        value = node["value"]
        if value is not None and not isinstance(value, (bool, int, float, str)):
            raise ValueError(f"unexpected value {str(value)[:80]}")
        return value
    if "list" in node or "tuple" in node:
        items = [_decode_tree(x, buffers) for x in node.get("list", node.get("tuple"))]
        return items if "list" in node else tuple(items)
    if "dict" in node:
        return {_decode_tree(k, buffers): _decode_tree(v, buffers) for k, v in node["dict"]}
    if "bytes" in node:
        return bytes(buffers[_index(node["bytes"])])
    return _decode_array(node, buffers)


def _index(value):
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"bad buffer index {value!r}")
    return value


def _decode_array(node, buffers):
    dtype = np.dtype(str(node["dtype"]))
    if dtype.hasobject or dtype.fields is not None:
        raise ValueError(f"refused dtype {dtype}")
    shape = tuple(_index(n) for n in node["shape"])
    arr = _array(buffers[_index(node["array"])], dtype, shape)
    return arr[()] if node["scalar"] is True and arr.ndim == 0 else arr


def _array(buf, dtype, shape):
    """A writable array of ``shape`` over a copy of ``buf``, whose size must match."""
    data = bytearray(buf)
    if len(data) != dtype.itemsize * math.prod(shape):
        raise ValueError(f"{len(data)} bytes for an array {shape} of {dtype}")
    return np.frombuffer(data, dtype).reshape(shape)


def _decode_arrays(buf):
    (count,), offset = struct.unpack_from("=i", buf), 4
    if count < 0:
        raise ValueError(f"bad array count {count}")
    arrays = []
    for _ in range(count):
        enum, ndim = struct.unpack_from("=ii", buf, offset)
        if enum not in _TF_DTYPES or not 0 <= ndim <= 64:
            raise ValueError(f"unsupported dtype enum {enum} or rank {ndim}")
        shape = struct.unpack_from(f"={ndim}i", buf, offset + 8)
        (nbytes,) = struct.unpack_from("=q", buf, offset + 8 + 4 * ndim)
        start = offset + 16 + 4 * ndim
        if nbytes < 0 or start + nbytes > len(buf) or min(shape, default=0) < 0:
            raise ValueError("truncated message")
        arrays.append(_array(buf[start:start + nbytes], _TF_DTYPES[enum], shape))
        offset = start + nbytes
    if offset != len(buf):
        raise ValueError(f"{len(buf) - offset} bytes after the last array")
    return arrays
