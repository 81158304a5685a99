"""InPlaceWriter: a new checkpoint is written into the data file of one that was deleted, kept
checkpoints give up their slots, a failed or interrupted write leaves no checkpoint file."""
import errno
import os
import shutil

import numpy as np
import pytest

import tfloop.callbacks.checkpoint_inplace as inplace
from tfloop.callbacks.checkpoint_bundle import DATA_SUFFIX, INDEX_SUFFIX
from tfloop.callbacks.checkpoint_inplace import InPlaceWriter, slot_directory
from tfloop.compat import tf


def values(step):
    return [np.full([256], step, np.float32), np.array(step, np.int64)]


def save(writer, directory, step):
    prefix = os.path.join(directory, f"model-{step}")
    writer.write(["w", "global_step"], prefix.encode(), *values(step))
    return prefix


def delete(writer, prefix, kept=False):
    """What TensorFlow's Saver does to a checkpoint beyond max_to_keep, as the snapshot's Saver
    drives it: the writer keeps the data file, then the checkpoint's files are deleted (unless
    the deleter keeps the checkpoint after all)."""
    writer.keep_data_of(prefix)
    if not kept:
        for suffix in (DATA_SUFFIX, INDEX_SUFFIX):
            os.remove(prefix + suffix)
    writer.settle()


def slots(directory):
    return sorted(os.listdir(os.path.join(directory, ".model-slots")))


def restored(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return [reader.get_tensor("w"), reader.get_tensor("global_step")]


def inode(prefix):
    return os.stat(prefix + DATA_SUFFIX).st_ino


def test_a_deleted_checkpoints_data_file_takes_the_next_checkpoint(tmp_path):
    writer = InPlaceWriter(max_to_keep=1)
    first = save(writer, tmp_path, 1)
    second = save(writer, tmp_path, 2)         # the first is still listed: a new file
    assert inode(second) != inode(first)
    reused = inode(first)
    delete(writer, first)
    assert slots(tmp_path) != []
    third = save(writer, tmp_path, 3)
    assert inode(third) == reused
    for step, prefix in ((2, second), (3, third)):
        np.testing.assert_array_equal(restored(prefix)[0], values(step)[0])
        assert restored(prefix)[1] == step
    assert slot_directory(third) == str(tmp_path / ".model-slots")
    assert slots(tmp_path) == []


def test_the_slots_hold_no_link_to_a_kept_checkpoint(tmp_path):
    # a copy of the directory copies no checkpoint's data twice
    writer = InPlaceWriter(max_to_keep=2)
    prefixes = []
    for step in range(1, 8):
        prefixes.append(save(writer, tmp_path, step))
        if len(prefixes) > 2:
            delete(writer, prefixes.pop(0))
        assert all(os.stat(tmp_path / ".model-slots" / n).st_nlink == 1 for n in slots(tmp_path))
        assert len(slots(tmp_path)) <= 2
    assert [restored(p)[1] for p in prefixes] == [6, 7]
    assert len({inode(p) for p in prefixes}) == 2


def test_a_checkpoint_kept_after_all_gives_its_data_file_back_and_stays_intact(tmp_path):
    writer = InPlaceWriter(max_to_keep=1)
    first = save(writer, tmp_path, 1)
    delete(writer, first, kept=True)           # keep_checkpoint_every_n_hours kept it
    assert slots(tmp_path) == []
    second = save(writer, tmp_path, 2)
    assert inode(second) != inode(first)
    assert [restored(p)[1] for p in (first, second)] == [1, 2]


def test_release_deletes_the_slots_not_the_checkpoints(tmp_path):
    writer = InPlaceWriter(max_to_keep=2)
    prefix = save(writer, tmp_path, 1)
    delete(writer, save(writer, tmp_path, 2))
    writer.release()
    assert not (tmp_path / ".model-slots").exists()
    assert restored(prefix)[1] == 1


def test_keeping_every_checkpoint_writes_new_files_and_keeps_no_slot(tmp_path):
    writer = InPlaceWriter(max_to_keep=None)
    prefixes = [save(writer, tmp_path, step) for step in (1, 2)]
    writer.keep_data_of(prefixes[0])
    writer.settle()
    assert slots(tmp_path) == []
    assert [restored(p)[1] for p in prefixes] == [1, 2]


def test_an_earlier_runs_slots_are_deleted_at_the_first_write(tmp_path):
    stale = tmp_path / ".model-slots"
    stale.mkdir()
    (stale / "slot-0").write_bytes(b"half of the tensors of a killed write")
    save(InPlaceWriter(max_to_keep=2), tmp_path, 1)
    assert os.listdir(stale) == []


def test_a_failed_write_leaves_no_checkpoint_file_and_gives_its_space_back(tmp_path,
                                                                          monkeypatch):
    writer = InPlaceWriter(max_to_keep=1)
    delete(writer, save(writer, tmp_path, 1))

    def full(fd, arrays):
        os.pwrite(fd, b"partial", 0)
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(inplace, "write_data", full)
    with pytest.raises(OSError, match="No space left"):
        save(writer, tmp_path, 2)
    assert os.listdir(tmp_path) == [".model-slots"]
    assert slots(tmp_path) == []
    monkeypatch.undo()
    assert restored(save(writer, tmp_path, 3))[1] == 3


def test_a_failed_index_write_leaves_no_checkpoint_file(tmp_path, monkeypatch):
    writer = InPlaceWriter(max_to_keep=1)

    def full(path, tensors):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(inplace, "write_index", full)
    with pytest.raises(OSError, match="No space left"):
        save(writer, tmp_path, 1)
    assert os.listdir(tmp_path) == [".model-slots"] and slots(tmp_path) == []


def test_without_hard_links_every_data_file_is_new(tmp_path, monkeypatch):
    def refuse(source, target):
        raise OSError(errno.EPERM, "Operation not permitted")
    monkeypatch.setattr(os, "link", refuse)
    writer = InPlaceWriter(max_to_keep=1)
    first = save(writer, tmp_path, 1)
    delete(writer, first)
    second = save(writer, tmp_path, 2)
    assert slots(tmp_path) == []
    assert restored(second)[1] == 2


def test_slots_deleted_under_the_writer_cost_only_their_reuse(tmp_path):
    writer = InPlaceWriter(max_to_keep=1)
    first = save(writer, tmp_path, 1)
    writer.keep_data_of(first)
    shutil.rmtree(tmp_path / ".model-slots")      # by hand, while training runs
    writer.settle()
    assert restored(save(writer, tmp_path, 2))[1] == 2
