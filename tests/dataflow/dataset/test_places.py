"""Places365Standard and TinyImageNet on tiny image folders in their standard layouts."""
import os

import numpy as np
import pytest

from tfloop.dataflow import dataset

cv2 = pytest.importorskip("cv2")


def _image(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(path, np.full((4, 5, 3), value, np.uint8))  # PNG data: read back exactly


def _write_places(directory):
    lines = {"train": ["train/bakery/1.png", "train/airfield/1.png", "train/bakery/2.png"],
             "val": ["/val/canyon/1.png", "./val/airfield/1.png"]}
    for split, rows in lines.items():
        for k, row in enumerate(rows):
            _image(os.path.join(directory, row.lstrip("./")), 10 * k + 1)
        (directory / f"{split}.txt").write_text("\n".join(rows) + "\n")


def test_places_labels_are_sorted_class_names(tmp_path):
    _write_places(tmp_path)
    train = dataset.Places365Standard(str(tmp_path), "train", shuffle=False)
    assert train.get_label_names() == ["airfield", "bakery"]
    train.reset_state()
    points = list(train)
    assert [p[1] for p in points] == [1, 0, 1]
    assert points[2][0].shape == (4, 5, 3) and int(points[2][0][0, 0, 0]) == 21
    val = dataset.Places365Standard(str(tmp_path), "val")
    assert not val.shuffle and val.get_label_names() == ["airfield", "canyon"]
    val.reset_state()
    assert [p[1] for p in val] == [1, 0]


def test_places_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"train.txt.*places2.csail.mit.edu"):
        dataset.Places365Standard(str(tmp_path), "train")
    with pytest.raises(ValueError, match="'test'"):
        dataset.Places365Standard(str(tmp_path), "test")
    (tmp_path / "val.txt").write_text("canyon.png\n")
    with pytest.raises(ValueError, match="lines are <split>/<class>/<image>.jpg"):
        dataset.Places365Standard(str(tmp_path), "val")
    (tmp_path / "val.txt").write_text("val/canyon/missing.png\n")
    val = dataset.Places365Standard(str(tmp_path), "val")
    val.reset_state()
    with pytest.raises(ValueError, match="cannot read the image .*missing.png"):
        next(iter(val))


def _write_tiny(directory):
    wnids = ["n02", "n01"]
    (directory / "wnids.txt").write_text("\n".join(wnids) + "\n")
    for label, wnid in enumerate(wnids):
        for k in range(2):
            _image(str(directory / "train" / wnid / "images" / f"{wnid}_{k}.png"), label * 10 + k)
    rows = ["val_0.png n01 0 0 4 5", "val_1.png n02 0 0 4 5", "val_2.png n01 0 0 4 5"]
    for k in range(3):
        _image(str(directory / "val" / "images" / f"val_{k}.png"), 100 + k)
    (directory / "val" / "val_annotations.txt").write_text("\n".join(rows) + "\n")


def test_tiny_imagenet_train_and_val(tmp_path):
    _write_tiny(tmp_path)
    train = dataset.TinyImageNet(str(tmp_path), "train", shuffle=False)
    train.reset_state()
    points = list(train)
    assert [p[1] for p in points] == [0, 0, 1, 1]
    assert [int(p[0][0, 0, 0]) for p in points] == [0, 1, 10, 11]
    val = dataset.TinyImageNet(str(tmp_path), "val")
    assert not val.shuffle and len(val) == 3
    val.reset_state()
    assert [(int(p[0][0, 0, 0]), p[1]) for p in val] == [(100, 1), (101, 0), (102, 1)]
    assert dataset.TinyImageNet(str(tmp_path), "train").shuffle


def test_tiny_imagenet_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"wnids.txt.*tiny-imagenet-200.zip"):
        dataset.TinyImageNet(str(tmp_path), "train")
    (tmp_path / "wnids.txt").write_text("n01\n")
    with pytest.raises(FileNotFoundError, match=r"no directory .*n01.images"):
        dataset.TinyImageNet(str(tmp_path), "train")
    (tmp_path / "val").mkdir()
    (tmp_path / "val" / "val_annotations.txt").write_text("a.png n09 0 0 1 1\n")
    with pytest.raises(ValueError, match="class 'n09', which is not in wnids.txt"):
        dataset.TinyImageNet(str(tmp_path), "val")
    with pytest.raises(ValueError, match="'test'"):
        dataset.TinyImageNet(str(tmp_path), "test")
