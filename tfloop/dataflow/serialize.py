"""Save a DataFlow to a file and read it back: LMDB (random access), npz, TFRecord.

Datapoints are pickled. lmdb and TensorFlow are imported only when their serializer is used.
"""
import os
import pickle
import struct

import numpy as np
import tqdm

from tfloop.dataflow.base import DataFlow, DataFlowReentrantGuard, RNGDataFlow
from tfloop.dataflow.common import FixedSizeData, MapData
from tfloop.dataflow.hdf5 import HDF5Serializer
from tfloop.dataflow.raw import DataFromGenerator, DataFromList
from tfloop.utils import logger
from tfloop.utils.extras import install_command

__all__ = ["LMDBData", "LMDBDataDecoder", "LMDBSerializer", "NumpySerializer",
           "TFRecordSerializer", "HDF5Serializer"]

_KEYS = b"__keys__"


def _check_dataflow(owner, df):
    if not isinstance(df, DataFlow):
        raise TypeError(f"{owner}.save needs a DataFlow, got {df!r}; wrap a list with "
                        "DataFromList(lst, shuffle=False).")


def _reset_and_size(df):
    df.reset_state()
    try:
        return len(df)
    except NotImplementedError:
        return None


def _dumps(dp):
    return pickle.dumps(dp, protocol=pickle.HIGHEST_PROTOCOL)


def _import_lmdb():
    try:
        import lmdb
    except ImportError:
        raise ImportError("LMDBSerializer needs the lmdb package: `pip install lmdb` (or "
                          f"`{install_command('dataflow')}`).") from None
    return lmdb


_ENVIRONMENTS = {}  # path -> (pid, environment): lmdb allows one environment per path and process


def _open_env(path):
    """The read-only environment of ``path`` for this process (shared by every reader here)."""
    pid, env = _ENVIRONMENTS.get(path, (None, None))
    if pid == os.getpid():
        return env
    if env is not None:  # inherited through a fork: unusable here, and it blocks a new one
        env.close()
    lmdb = _import_lmdb()
    env = lmdb.open(path, subdir=os.path.isdir(path), readonly=True, lock=False, readahead=True,
                    map_size=2 ** 40, max_readers=100)
    _ENVIRONMENTS[path] = (os.getpid(), env)
    return env


def _key(index):
    return f"{index:08}".encode("ascii")


class LMDBData(RNGDataFlow):
    """``[key, value]`` byte pairs of an LMDB database (``value`` is still serialized).

    Example:
        >>> df = LMDBData("train.lmdb", shuffle=False)  # doctest: +SKIP
    """

    def __init__(self, lmdb_path, shuffle=True, keys=None):
        """
        Args:
            lmdb_path (str): an LMDB directory or file.
            shuffle (bool): produce the entries in a random order at every pass.
            keys (list[bytes] or str): the keys to read, or a format string such as
                ``"{:0>8d}"`` that makes them from the indices 0 to (entries - 1); by default
                those stored by :meth:`LMDBSerializer.save`, else all keys of the database.
        """
        super().__init__()
        if not os.path.exists(lmdb_path):
            raise FileNotFoundError(f"LMDBData: no LMDB database at {lmdb_path!r}.")
        self._lmdb_path = os.path.abspath(lmdb_path)
        self._shuffle = shuffle
        with _open_env(self._lmdb_path).begin() as txn:
            stored = txn.get(_KEYS)
            if isinstance(keys, str):
                entries = txn.stat()["entries"] - (stored is not None)
                self.keys = [keys.format(k).encode("utf-8") for k in range(entries)]
            elif keys is not None:
                self.keys = list(keys)
            elif stored is not None:
                self.keys = pickle.loads(stored)
            else:
                self.keys = [k for k, _ in txn.cursor() if k != _KEYS]
        self._env = None

    def reset_state(self):
        super().reset_state()
        self._guard = DataFlowReentrantGuard()
        self._env = _open_env(self._lmdb_path)

    def __len__(self):
        return len(self.keys)

    def __iter__(self):
        if self._env is None:
            raise RuntimeError("Call LMDBData.reset_state() before iterating it.")
        with self._guard, self._env.begin() as txn:
            order = self.rng.permutation(len(self.keys)) if self._shuffle else range(len(self.keys))
            for k in order:
                key = self.keys[k]
                yield [key, txn.get(key)]


def LMDBDataDecoder(lmdb_data, decoder):
    """Decode each ``[key, value]`` of an :class:`LMDBData` into a datapoint with
    ``decoder(key, value)``; a None result skips the entry.

    Example:
        >>> df = LMDBDataDecoder(LMDBData("x.lmdb"), lambda k, v: [len(v)])  # doctest: +SKIP
    """
    if not isinstance(lmdb_data, LMDBData):
        raise TypeError(f"LMDBDataDecoder decodes an LMDBData, got {lmdb_data!r}.")
    return MapData(lmdb_data, lambda dp: decoder(dp[0], dp[1]))


class LMDBSerializer:
    """Writes a DataFlow to an LMDB database (keys are indices, values pickled datapoints), and
    reads it back with random access (so it can be shuffled). Needs the lmdb package.

    Example:
        >>> LMDBSerializer.save(df, "train.lmdb")  # doctest: +SKIP
        >>> df = LMDBSerializer.load("train.lmdb", shuffle=True)  # doctest: +SKIP
    """

    @staticmethod
    def save(df, path, write_frequency=5000):
        """
        Args:
            df (DataFlow): the DataFlow to write (reset here).
            path (str): an existing directory (the database goes in it) or a new file path.
            write_frequency (int): commit after this many datapoints.
        """
        lmdb = _import_lmdb()
        _check_dataflow("LMDBSerializer", df)
        is_dir = os.path.isdir(path)
        existing = os.path.join(path, "data.mdb") if is_dir else path
        if os.path.isfile(existing):
            raise FileExistsError(f"LMDBSerializer.save: {existing!r} exists; remove it or "
                                  "choose another path (it is never overwritten).")
        size = _reset_and_size(df)
        env = lmdb.open(path, subdir=is_dir, map_size=2 ** 30, readonly=False, meminit=False,
                        map_async=True)

        def put(txn, key, value):
            while True:
                try:
                    txn.put(key, value)
                    return txn
                except lmdb.MapFullError:
                    txn.abort()
                    env.set_mapsize(env.info()["map_size"] * 2)
                    txn = env.begin(write=True)

        count = 0
        txn = env.begin(write=True)
        try:
            for count, dp in enumerate(tqdm.tqdm(df, total=size, ascii=True), start=1):
                txn = put(txn, _key(count - 1), _dumps(dp))
                if count % write_frequency == 0:
                    txn.commit()
                    txn = env.begin(write=True)
            txn = put(txn, _KEYS, _dumps([_key(k) for k in range(count)]))
            txn.commit()
        except BaseException:
            txn.abort()
            raise
        finally:
            env.sync()
            env.close()
        logger.info(f"LMDBSerializer: wrote {count} datapoints to {path}.")

    @staticmethod
    def load(path, shuffle=True):
        """A DataFlow of the datapoints saved at ``path``.

        Args:
            path (str): what :meth:`save` wrote.
            shuffle (bool): random order at every pass.
        """
        return MapData(LMDBData(path, shuffle=shuffle), lambda dp: pickle.loads(dp[1]))


class NumpySerializer:
    """Writes a whole DataFlow into one compressed ``.npz`` file (held in memory while saving).

    Example:
        >>> NumpySerializer.save(df, "train.npz")  # doctest: +SKIP
        >>> df = NumpySerializer.load("train.npz", shuffle=False)  # doctest: +SKIP
    """

    @staticmethod
    def save(df, path):
        """
        Args:
            df (DataFlow): the DataFlow to write (reset here).
            path (str): the output ``.npz`` file.
        """
        _check_dataflow("NumpySerializer", df)
        size = _reset_and_size(df)
        datapoints = list(tqdm.tqdm(df, total=size, ascii=True))
        buffer = np.empty(len(datapoints), dtype=object)
        for k, dp in enumerate(datapoints):
            buffer[k] = dp
        np.savez_compressed(path, buffer=buffer)

    @staticmethod
    def load(path, shuffle=True):
        """
        Args:
            path (str): what :meth:`save` wrote.
            shuffle (bool): random order at every pass.
        """
        with np.load(path, allow_pickle=True) as data:
            return DataFromList(list(data["buffer"]), shuffle=shuffle)


def _read_tfrecords(path):
    """The records of a TFRecord file (each: 8-byte length, 4-byte CRC, data, 4-byte CRC); read
    without TensorFlow, checksums not verified."""
    with open(path, "rb") as f:
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise ValueError(f"{path} is truncated: a record header is cut short.")
            length = struct.unpack("<Q", header[:8])[0]
            data = f.read(length)
            if len(data) < length or len(f.read(4)) < 4:
                raise ValueError(f"{path} is truncated: a record of {length} bytes is cut short.")
            yield data


class TFRecordSerializer:
    """Writes pickled datapoints as the records of a TFRecord file, and reads them back (in file
    order: TFRecord has no random access). Writing imports TensorFlow; reading does not.

    Example:
        >>> TFRecordSerializer.save(df, "train.tfrecord")  # doctest: +SKIP
        >>> df = TFRecordSerializer.load("train.tfrecord", size=1000)  # doctest: +SKIP
    """

    @staticmethod
    def save(df, path):
        """
        Args:
            df (DataFlow): the DataFlow to write (reset here).
            path (str): the output file.
        """
        from tfloop.compat import tf
        _check_dataflow("TFRecordSerializer", df)
        size = _reset_and_size(df)
        with tf.io.TFRecordWriter(path) as writer:
            for dp in tqdm.tqdm(df, total=size, ascii=True):
                writer.write(_dumps(dp))

    @staticmethod
    def load(path, size=None):
        """
        Args:
            path (str): what :meth:`save` wrote.
            size (int): number of records, if known: the DataFlow then has this length.
        """
        if not os.path.isfile(path):
            raise FileNotFoundError(f"TFRecordSerializer.load: no file {path!r}.")

        df = MapData(DataFromGenerator(lambda: _read_tfrecords(path)), pickle.loads)
        return FixedSizeData(df, size) if size is not None else df
