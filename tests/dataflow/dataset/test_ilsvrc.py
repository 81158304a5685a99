"""ILSVRC12, ILSVRC12Files and ILSVRCMeta on a tiny copy in tensorpack's layout."""
import os

import numpy as np
import pytest
from dataflow_support import write_ilsvrc

from tfloop.dataflow import dataset

pytest.importorskip("cv2")


@pytest.fixture
def imagenet(tmp_path):
    synsets = write_ilsvrc(str(tmp_path / "imagenet"), str(tmp_path / "meta"))
    return str(tmp_path / "imagenet"), str(tmp_path / "meta"), synsets


def test_meta_reads_synsets_words_and_lists(imagenet):
    _, meta_dir, synsets = imagenet
    meta = dataset.ILSVRCMeta(meta_dir)
    assert meta.get_synset_1000() == dict(enumerate(synsets))
    assert meta.get_synset_words_1000()[2] == f"{synsets[2]} thing 2"
    assert meta.get_image_list("val")[1] == ("ILSVRC2012_val_00000002.JPEG", 1)
    assert meta.get_image_list("val", "train")[1] == (
        os.path.join(synsets[1], "ILSVRC2012_val_00000002.JPEG"), 1)
    with pytest.raises(ValueError, match="dir_structure must be one of"):
        meta.get_image_list("val", "flat")


def test_files_and_images_of_each_split(imagenet):
    directory, meta_dir, synsets = imagenet
    files = dataset.ILSVRC12Files(directory, "train", meta_dir=meta_dir)
    assert files.shuffle and len(files) == 6
    files.reset_state()
    assert sorted(label for _, label in files) == [0, 0, 1, 1, 2, 2]
    val = dataset.ILSVRC12(directory, "val", meta_dir=meta_dir)
    assert not val.shuffle
    val.reset_state()
    points = list(val)
    assert [label for _, label in points] == [0, 1, 2]
    assert all(img.shape == (40, 48, 3) and img.dtype == np.uint8 for img, _ in points)


def test_val_in_synset_folders_is_recognized(tmp_path):
    synsets = write_ilsvrc(str(tmp_path / "in"), str(tmp_path / "meta"), val_structure="train")
    val = dataset.ILSVRC12Files(str(tmp_path / "in"), "val", meta_dir=str(tmp_path / "meta"))
    val.reset_state()
    assert next(iter(val))[0].endswith(f"val/{synsets[0]}/ILSVRC2012_val_00000001.JPEG")


def test_missing_files_name_the_layout(tmp_path, imagenet):
    directory, meta_dir, _ = imagenet
    with pytest.raises(FileNotFoundError, match=r"<dir>/train/<synset>/<image>\.JPEG"):
        dataset.ILSVRC12(str(tmp_path / "nowhere"), "train", meta_dir=meta_dir)
    with pytest.raises(FileNotFoundError, match="synsets.txt.*caffe_ilsvrc12.tar.gz"):
        dataset.ILSVRC12(directory, "train", meta_dir=str(tmp_path))
    os.remove(os.path.join(directory, "val", "ILSVRC2012_val_00000002.JPEG"))
    with pytest.raises(FileNotFoundError, match="ILSVRC2012_val_00000002.JPEG"):
        dataset.ILSVRC12(directory, "val", meta_dir=meta_dir)
