"""BSDS500 on tiny files in the ``BSR/BSDS500/data`` layout."""
import numpy as np
import pytest
from dataflow_support import write_bsds500

from tfloop.dataflow import dataset

pytest.importorskip("scipy")
pytest.importorskip("cv2")


def test_bsds500_images_and_annotator_averaged_edges(tmp_path):
    made = write_bsds500(str(tmp_path))
    train = dataset.BSDS500("train", data_dir=str(tmp_path), shuffle=False)
    assert len(train) == 2
    train.reset_state()
    (portrait, edges0), (image, edges1) = list(train)
    assert portrait.shape == image.shape == (321, 481, 3) and image.dtype == np.uint8
    assert edges1.dtype == np.float32 and set(np.unique(edges1)) <= {0.0, 0.5}
    np.testing.assert_array_equal(edges1, made["train"][1][1])
    np.testing.assert_array_equal(edges0, made["train"][0][1].T)


def test_bsds500_missing_files_name_the_layout(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"BSR/BSDS500/data/images/<name>/<id>\.jpg"):
        dataset.BSDS500("val", data_dir=str(tmp_path))
