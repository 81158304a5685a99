"""BSDS500 (Berkeley segmentation) edge maps from the standard ``BSR`` directory."""
import glob
import os

import numpy as np

from tfloop.dataflow.dataset._files import ImageLabelData, dataset_dir
from tfloop.utils.optional import require

__all__ = ["BSDS500"]

IMG_H, IMG_W = 321, 481
_LAYOUT = ("<data_dir>/BSR/BSDS500/data/images/<name>/<id>.jpg and "
           "<data_dir>/BSR/BSDS500/data/groundTruth/<name>/<id>.mat (extract BSR_bsds500.tgz from "
           "https://www2.eecs.berkeley.edu/Research/Projects/CS/vision/grouping/resources.html)")


def _edge_map(mat_path, loadmat):
    """The fraction of annotators marking each pixel as a boundary, HxW float32."""
    annotations = loadmat(mat_path)["groundTruth"][0]
    total = sum(annotations[k]["Boundaries"][0][0] for k in range(len(annotations)))
    edges = total.astype("float32") / len(annotations)
    return edges.T if edges.shape[0] > edges.shape[1] else edges


class BSDS500(ImageLabelData):
    """``[image, edges]``: 321x481x3 uint8 BGR images (portrait ones transposed) and 321x481
    float32 edge maps in [0, 1] (the fraction of annotators marking the pixel as a boundary).

    Args:
        name (str): ``"train"``, ``"val"`` or ``"test"``.
        data_dir (str): the directory holding ``BSR/``; by default ``$TFLOOP_DATASET/bsds500_data``.
        shuffle (bool): a new order at each pass.

    Needs scipy and OpenCV (``pip install 'tfloop-train[datasets]'``).

    Example:
        >>> ds = BSDS500("train")  # doctest: +SKIP
    """

    def __init__(self, name, data_dir=None, shuffle=True):
        if name not in ("train", "val", "test"):
            raise ValueError(f"BSDS500: name must be 'train', 'val' or 'test', got {name!r}.")
        self.shuffle = shuffle
        self.data_root = os.path.join(dataset_dir("bsds500_data", data_dir), "BSR", "BSDS500",
                                      "data")
        files = sorted(glob.glob(os.path.join(self.data_root, "images", name, "*.jpg")))
        if not files:
            raise FileNotFoundError(f"BSDS500: no image in {self.data_root}/images/{name}. "
                                    f"The layout is {_LAYOUT}; tfloop does not download it.")
        cv2 = require("cv2", "datasets", "BSDS500")
        loadmat = require("scipy.io", "datasets", "BSDS500").loadmat
        self.images = np.zeros((len(files), IMG_H, IMG_W, 3), dtype="uint8")
        self.labels = np.zeros((len(files), IMG_H, IMG_W), dtype="float32")
        for i, path in enumerate(files):
            self.images[i], self.labels[i] = self._load(path, name, cv2, loadmat)
        self.data, self.label = self.images, self.labels  # tensorpack's attribute names

    def _load(self, path, name, cv2, loadmat):
        image = cv2.imread(path, cv2.IMREAD_COLOR)
        if image is None:
            raise ValueError(f"BSDS500: cannot decode {path}.")
        if image.shape[0] > image.shape[1]:
            image = image.transpose(1, 0, 2)
        image_id = os.path.splitext(os.path.basename(path))[0]
        mat = os.path.join(self.data_root, "groundTruth", name, image_id + ".mat")
        if not os.path.isfile(mat):
            raise FileNotFoundError(f"BSDS500: {mat} (the edges of {path}) is missing; the "
                                    f"layout is {_LAYOUT}.")
        edges = _edge_map(mat, loadmat)
        if image.shape[:2] != (IMG_H, IMG_W) or edges.shape != (IMG_H, IMG_W):
            raise ValueError(f"BSDS500: {path} is {image.shape[:2]} with edges {edges.shape}; "
                             f"expected {(IMG_H, IMG_W)}.")
        return image, edges
