"""Two ModelSavers in one directory, as tensorpack scripts keep them: a frequent one with a small
max_to_keep and a long-lived one. With tensorpack, the frequent saver deleted model-6 when it
dropped it, although the long-lived one had saved it too, and the ``checkpoint`` file listed only
the last writer's checkpoints."""
import os

import numpy as np
import pytest
from resume_support import make_dataset
from support import LinearModel, train_linear

import tfloop
from tfloop.callbacks.checkpoint_dir import SharedCheckpointDir
from tfloop.compat import tfv1
from tfloop.utils import logger


def checkpoint_steps(directory):
    return sorted(int(name[len("model-"):-len(".index")]) for name in os.listdir(directory)
                  if name.startswith("model-") and name.endswith(".index"))


def listed(directory):
    """The checkpoint file: (latest, every listed checkpoint), as names."""
    state = tfv1.train.get_checkpoint_state(directory)
    return (os.path.basename(state.model_checkpoint_path),
            [os.path.basename(p) for p in state.all_model_checkpoint_paths])


class WeightsAt(tfloop.Callback):
    """The weights ``w`` after each epoch, by global step."""

    def __init__(self):
        self.at = {}

    def _setup_graph(self):
        self.w = self.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)[0]

    def _trigger_epoch(self):
        self.at[self.global_step] = self.trainer.sess.run(self.w)


def restored_w(prefix):
    graph = tfv1.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", [3, 1])
        tfv1.train.get_or_create_global_step()
        with tfv1.Session(graph=graph) as sess:
            tfv1.train.Saver().restore(sess, prefix)
            return sess.run(w)


def frequent_and_long_lived(background=True):
    return (tfloop.ModelSaver(max_to_keep=2, background=background),
            tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=100, background=background),
                                   every_k_epochs=2))


@pytest.mark.parametrize("background", [True, False])
@pytest.mark.parametrize("long_lived_first", [False, True])
def test_each_saver_keeps_its_own_and_a_shared_step_is_written_once(logdir, log_lines,
                                                                    background, long_lived_first):
    frequent, long_lived = frequent_and_long_lived(background)
    weights = WeightsAt()
    savers = [long_lived, frequent] if long_lived_first else [frequent, long_lived]
    train_linear(savers + [weights], max_epoch=5)     # 3 steps per epoch
    # frequent: 3, 6, 9, 12, 15 -> keeps 12, 15; long-lived: 6, 12, then 15 at the end.
    assert checkpoint_steps(logdir) == [6, 12, 15]
    assert listed(logdir) == ("model-15", ["model-6", "model-12", "model-15"])
    for step in (6, 12, 15):
        np.testing.assert_array_equal(restored_w(os.path.join(logdir, f"model-{step}")),
                                      weights.at[step])
    written = [line for line in log_lines if line.startswith("Model saved to")]
    assert sorted(written) == sorted(f"Model saved to {os.path.join(logdir, f'model-{s}')}."
                                     for s in (3, 6, 9, 12, 15))
    assert frequent.last_checkpoint == long_lived.cb.last_checkpoint == \
        os.path.join(logdir, "model-15")
    assert [n for n in os.listdir(logdir) if n.endswith(".meta")] == ["graph-3.meta"]


def test_savers_sharing_a_directory_reuse_its_data_files_without_overwriting_a_kept_one(logdir):
    # both write in place into the directory's spare data files: every checkpoint they keep holds
    # the weights of its own step, however the two savers' writes interleave
    frequent = tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=1), every_k_epochs=2)
    long_lived = tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=3), every_k_epochs=3)
    weights = WeightsAt()
    train_linear([frequent, long_lived, weights], max_epoch=10)
    # frequent writes 6, 12, 18, 24, 30 and keeps 30; long-lived writes 9, 27 and keeps 18, 27, 30
    assert checkpoint_steps(logdir) == [18, 27, 30]
    for step in (18, 27, 30):
        np.testing.assert_array_equal(restored_w(os.path.join(logdir, f"model-{step}")),
                                      weights.at[step])
    assert not os.path.exists(os.path.join(logdir, ".model-slots"))


class DataFiles(tfloop.Callback):
    """After each epoch's save (listed after the saver): the inode of each checkpoint's data file,
    and the link counts of the files in the slots."""

    def __init__(self, saver):
        self.saver, self.inodes, self.slot_links = saver, {}, []

    def _trigger_epoch(self):
        prefix = self.saver.checkpoint_at(self.global_step)     # waits for the write
        self.inodes[self.global_step] = os.stat(prefix + ".data-00000-of-00001").st_ino
        slots = os.path.join(self.saver.checkpoint_dir, ".model-slots")
        self.slot_links += [os.stat(os.path.join(slots, n)).st_nlink for n in os.listdir(slots)]


def test_a_saver_writes_into_the_data_files_of_the_checkpoints_it_deleted(logdir):
    saver = tfloop.ModelSaver(max_to_keep=2)
    files_seen, weights = DataFiles(saver), WeightsAt()
    train_linear([saver, files_seen, weights], max_epoch=6)
    # 3, 6, 9 in new files (9 is written before its save deletes 3); from 12 on, each checkpoint
    # goes into the file of the one the save before deleted
    assert checkpoint_steps(logdir) == [15, 18]
    inodes = files_seen.inodes
    assert len({inodes[s] for s in (3, 6, 9)}) == 3
    assert (inodes[12], inodes[15], inodes[18]) == (inodes[3], inodes[6], inodes[9])
    assert files_seen.slot_links and set(files_seen.slot_links) == {1}   # spares only
    for step in (15, 18):
        np.testing.assert_array_equal(restored_w(os.path.join(logdir, f"model-{step}")),
                                      weights.at[step])
    assert not os.path.exists(os.path.join(logdir, ".model-slots"))


def _resume(logdir, max_epoch, long_lived_keeps):
    logger.set_logger_dir(logdir, action="keep")
    config = tfloop.AutoResumeTrainConfig(
        model=LinearModel(), data=tfloop.DatasetInput(make_dataset),
        callbacks=[tfloop.ModelSaver(max_to_keep=2),
                   tfloop.PeriodicTrigger(tfloop.ModelSaver(max_to_keep=long_lived_keeps),
                                          every_k_epochs=2)],
        max_epoch=max_epoch)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    return config


@pytest.mark.slow
def test_a_resumed_run_gives_each_saver_back_what_it_kept(logdir, log_lines):
    _resume(logdir, max_epoch=5, long_lived_keeps=3)
    assert checkpoint_steps(logdir) == [6, 12, 15]
    config = _resume(logdir, max_epoch=8, long_lived_keeps=3)
    assert config.starting_epoch == 6          # from model-15
    # frequent: 12, 15 (restored), then 18, 21, 24 -> keeps 21, 24; long-lived: 6, 12, 15
    # (restored), then 18 (epoch 6), 24 (epoch 8) -> keeps 15, 18, 24. 6 and 12 are gone.
    assert checkpoint_steps(logdir) == [15, 18, 21, 24]
    assert listed(logdir) == ("model-24", [f"model-{s}" for s in (15, 18, 21, 24)])
    assert not [line for line in log_lines if "earlier checkpoint" in line]
    assert {n for n in os.listdir(logdir) if n.endswith(".resume.json")} == \
        {f"model-{s}.resume.json" for s in (15, 18, 21, 24)}


def test_checkpoints_of_an_earlier_run_without_resume_state_are_kept(logdir, log_lines):
    train_linear(list(frequent_and_long_lived()), max_epoch=5)
    train_linear(list(frequent_and_long_lived()), max_epoch=4)    # a new run from step 0
    # earlier: 6, 12, 15 (kept, counted by neither saver); frequent: 3, 6, 9, 12 -> 9, 12;
    # long-lived: 6, 12 (and 12 at the end); 3 is dropped.
    assert checkpoint_steps(logdir) == [6, 9, 12, 15]
    assert listed(logdir) == ("model-12", ["model-15", "model-6", "model-9", "model-12"])
    assert [line for line in log_lines if "earlier checkpoint" in line] == [
        f"ModelSaver: 3 earlier checkpoint(s) in {logdir}, which 2 ModelSavers share, are kept: "
        "which saver wrote each is not recorded, so none of them counts them towards its "
        "max_to_keep."]


def _touch_checkpoint(directory, step):
    prefix = os.path.join(directory, f"model-{step}")
    for suffix in (".index", ".data-00000-of-00001"):
        open(prefix + suffix, "w").close()
    return prefix


def test_a_checkpoint_goes_when_no_saver_keeps_it(tmp_path):
    shared = SharedCheckpointDir(str(tmp_path))
    shared.join("a", max_to_keep=1, keep_hours=1000)
    shared.join("b", max_to_keep=2, keep_hours=1000)
    for member, step in [("a", 1), ("b", 1), ("a", 2), ("b", 3), ("a", 4), ("b", 5)]:
        shared.written(member, _touch_checkpoint(str(tmp_path), step))
    # a keeps 4; b keeps 3, 5; 1 and 2 were dropped by every saver that had them.
    assert checkpoint_steps(str(tmp_path)) == [3, 4, 5]
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["checkpoint"] + [f"model-{s}{x}" for s in (3, 4, 5)
                          for x in (".index", ".data-00000-of-00001")])
    assert listed(str(tmp_path)) == ("model-5", ["model-3", "model-4", "model-5"])


def test_max_to_keep_0_keeps_everything_and_every_n_hours_keeps_some_for_good(tmp_path):
    shared = SharedCheckpointDir(str(tmp_path))
    shared.join("all", max_to_keep=0, keep_hours=1)
    shared.join("hourly", max_to_keep=1, keep_hours=1e-9)   # every dropped one is due: kept
    for step in (1, 2, 3):
        shared.written("hourly", _touch_checkpoint(str(tmp_path), step))
    shared.written("all", _touch_checkpoint(str(tmp_path), 4))
    assert checkpoint_steps(str(tmp_path)) == [1, 2, 3, 4]
    assert listed(str(tmp_path)) == ("model-4", ["model-1", "model-2", "model-3", "model-4"])


def test_a_background_write_done_before_it_is_recorded_keeps_nothing_by_mistake(tmp_path):
    # the writing thread may finish (written) before the training thread records the write
    # (runs_in_background): the checkpoint must still go when its saver drops it
    shared = SharedCheckpointDir(str(tmp_path))
    shared.join("frequent", max_to_keep=1, keep_hours=1000)
    for step in (1, 2):
        prefix = os.path.join(str(tmp_path), f"model-{step}")
        shared.started("frequent", step, prefix)
        shared.written("frequent", _touch_checkpoint(str(tmp_path), step))
        shared.runs_in_background(step, pending=None)
    assert checkpoint_steps(str(tmp_path)) == [2]
    assert shared.state_of("frequent")["kept"][0][0] == "model-2"
