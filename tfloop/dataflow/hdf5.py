"""HDF5 files as DataFlows (tensorpack's ``HDF5Data`` and ``HDF5Serializer``); needs h5py
(``pip install 'tfloop-train[hdf5]'``). The whole file is read into memory."""
import os
import uuid

import numpy as np
import tqdm

from tfloop.dataflow.base import DataFlow, RNGDataFlow
from tfloop.utils import logger
from tfloop.utils.optional import require

__all__ = ["HDF5Data", "HDF5Serializer"]


def _h5py(user):
    return require("h5py", "hdf5", user)


class HDF5Data(RNGDataFlow):
    """Zip the datasets ``data_paths`` of an HDF5 file: datapoint k is ``[d[k] for d in ...]``.

    Args:
        filename (str): the HDF5 file.
        data_paths (list[str]): the HDF5 dataset paths, e.g. ``["images", "labels"]``; all of
            the same length.
        shuffle (bool): a new order at each pass.

    Example:
        >>> df = HDF5Data("train.h5", ["images", "labels"])  # doctest: +SKIP
    """

    def __init__(self, filename, data_paths, shuffle=True):
        h5py = _h5py("HDF5Data")
        logger.info(f"Loading {filename} to memory...")
        with h5py.File(filename, "r") as f:
            missing = [p for p in data_paths if p not in f]
            if missing:
                raise KeyError(f"HDF5Data: {filename} has no dataset {missing}; it has "
                               f"{sorted(f.keys())}.")
            self.dps = [f[p][...] for p in data_paths]
        lengths = {p: len(d) for p, d in zip(data_paths, self.dps)}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"HDF5Data: the datasets of {filename} differ in length: {lengths}.")
        self._size = len(self.dps[0]) if self.dps else 0
        self.shuffle = shuffle

    def __len__(self):
        return self._size

    def __iter__(self):
        order = self.rng.permutation(self._size) if self.shuffle else range(self._size)
        for k in order:
            yield [d[k] for d in self.dps]


class HDF5Serializer:
    """Write each component of a DataFlow's datapoints to one dataset of an HDF5 file.

    Components must stack into arrays (numbers, or arrays of one shape).

    Example:
        >>> HDF5Serializer.save(df, "train.h5", ["images", "labels"])  # doctest: +SKIP
        >>> df = HDF5Serializer.load("train.h5", ["images", "labels"])  # doctest: +SKIP
    """

    @staticmethod
    def save(df, path, data_paths):
        """
        Args:
            df (DataFlow): the DataFlow to write (reset here).
            path (str): the output file (replaced only once complete).
            data_paths (list[str]): one HDF5 path per datapoint component.
        """
        h5py = _h5py("HDF5Serializer")
        if not isinstance(df, DataFlow):
            raise TypeError(f"HDF5Serializer.save needs a DataFlow, got {df!r}.")
        df.reset_state()
        columns = [[] for _ in data_paths]
        for dp in tqdm.tqdm(df, ascii=True):
            if len(dp) != len(data_paths):
                raise ValueError(f"HDF5Serializer.save: a datapoint has {len(dp)} components "
                                 f"but data_paths names {len(data_paths)}: {data_paths}.")
            for column, component in zip(columns, dp):
                column.append(component)
        tmp_path = os.path.join(os.path.dirname(os.path.abspath(path)),
                                f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            with h5py.File(tmp_path, "w") as f:
                for data_path, column in zip(data_paths, columns):
                    f.create_dataset(data_path, data=np.asarray(column))
            os.replace(tmp_path, path)
        finally:
            if os.path.exists(tmp_path):
                os.remove(tmp_path)

    @staticmethod
    def load(path, data_paths, shuffle=True):
        """An :class:`HDF5Data` of ``path``'s ``data_paths``."""
        return HDF5Data(path, data_paths, shuffle)
