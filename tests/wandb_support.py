"""Reading W&B's offline run files (``run-<id>.wandb``) back, as ``wandb sync`` would.

The file is a LevelDB-style log: a 7-byte header (``:W&B``, magic 0xBEE1, version), then 32 KiB
blocks of chunks, each with a 7-byte header (crc32, length, type: full/first/middle/last); the
chunks of one record hold one serialized ``wandb_internal_pb2.Record``.
"""
import glob
import json
import os
import struct

_BLOCK = 32768
_HEADER = struct.Struct("<IHB")
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def _chunks(data):
    offset = 7  # the file header
    while offset + _HEADER.size <= len(data):
        left_in_block = _BLOCK - offset % _BLOCK
        if left_in_block < _HEADER.size:
            offset += left_in_block
            continue
        _, length, kind = _HEADER.unpack_from(data, offset)
        offset += _HEADER.size
        if kind == 0 and length == 0:
            break
        yield kind, data[offset:offset + length]
        offset += length


def read_records(path):
    """Every ``Record`` in the run file ``path``, in order."""
    from wandb.proto import wandb_internal_pb2
    with open(path, "rb") as f:
        data = f.read()
    assert data[:4] == b":W&B", path
    records, parts = [], []
    for kind, chunk in _chunks(data):
        parts.append(chunk)
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(b"".join(parts))
            records.append(record)
            parts = []
    return records


def offline_runs(wandb_dir):
    """The run files under ``<wandb_dir>/wandb/``, oldest first."""
    return sorted(glob.glob(os.path.join(wandb_dir, "wandb", "offline-run-*", "run-*.wandb")))


class OfflineRun:
    """What one offline run file holds: its run record, history rows and exit code."""

    def __init__(self, path):
        self.path = path
        self.run = None
        self.history = []  # (step, {key: value})
        self.exit_code = None
        self.config = {}
        for record in read_records(path):
            kind = record.WhichOneof("record_type")
            if kind == "run":
                self.run = record.run
                self.config.update(_items(record.run.config.update))
            elif kind == "config":
                self.config.update(_items(record.config.update))
            elif kind == "history":
                row = _items(record.history.item)
                self.history.append((record.history.step.num, row))
            elif kind == "exit":
                self.exit_code = record.exit.exit_code

    def scalars(self, key):
        """``[(step, value)]`` of the history key ``key``."""
        return [(step, row[key]) for step, row in self.history if key in row]


def _items(items):
    return {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in items}
