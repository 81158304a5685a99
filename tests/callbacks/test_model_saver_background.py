"""ModelSaver's background write: training goes on while a checkpoint is written, the checkpoint
holds the weights of its step, and it is listed (and resumable) only once complete."""
import filecmp
import multiprocessing
import os
import subprocess
import threading
import time

import numpy as np
import pytest
import resume_support
from resume_support import read_stats, train
from support import LinearModel, batches, make_regression_data, scaled_timeout, train_linear

import tfloop
from tfloop.compat import tfv1
from tfloop.resume.session_init import find_resume_checkpoint
from tfloop.resume.state import read_resume_state
from tfloop.utils import logger

WAIT_S = scaled_timeout(30)


class HoldWrite(tfloop.Callback):
    """Holds ModelSaver's background write of global step ``step`` until ``release`` is set: at
    global step ``release_at`` (from its ``trigger_step``), or when ``armed`` and the training
    thread waits for the write (``released_at`` is the step it did). Records what the training
    thread saw in the steps it ran meanwhile, and the weights at each trigger."""

    def __init__(self, saver, step, release_at=None):
        self.saver, self.step, self.release_at = saver, step, release_at
        self.entered, self.release = threading.Event(), threading.Event()
        self.armed = False
        self.released_at = None
        self.seen = {}      # global step -> (write entered, model-<step>.index exists, listed)
        self.weights = {}

    def _setup_graph(self):
        self.w = self.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)[0]

    def _before_train(self):
        snapshot_saver, writer = self.saver._snapshot.saver, self.saver._writer
        save, wait = snapshot_saver.save, writer.wait

        def held_save(sess, path, global_step, **kwargs):
            if global_step == self.step:
                self.entered.set()
                if not self.release.wait(WAIT_S):
                    raise RuntimeError("the test never released the write")
            return save(sess, path, global_step=global_step, **kwargs)

        def releasing_wait():
            if self.armed and not self.release.is_set():
                self.released_at = self.global_step
                self.release.set()
            wait()
        snapshot_saver.save, writer.wait = held_save, releasing_wait

    def _trigger(self):
        self.weights[self.global_step] = self.trainer.sess.run(self.w)

    def _trigger_step(self):
        if self.global_step <= self.step:
            return
        prefix = os.path.join(self.saver.checkpoint_dir, f"model-{self.step}")
        self.seen[self.global_step] = (
            self.entered.wait(WAIT_S), os.path.exists(prefix + ".index"),
            tfv1.train.latest_checkpoint(self.saver.checkpoint_dir) == prefix)
        if self.global_step == self.release_at:
            self.release.set()


class Arm(tfloop.Callback):
    """Arms ``hold`` at the trigger of global step ``step``, then puts ``1 / step`` as ``val``."""

    def __init__(self, hold, step):
        self.hold, self.step = hold, step

    def _trigger(self):
        if self.global_step == self.step:
            self.hold.armed = True
        self.trainer.monitors.put_scalar("val", 1.0 / self.global_step)


def restore_w(prefix):
    return tfloop.load_chkpt_vars(prefix)["w"]


def checkpoint_steps(directory):
    return sorted(int(n[len("model-"):-len(".index")]) for n in os.listdir(directory)
                  if n.startswith("model-") and n.endswith(".index"))


def test_training_goes_on_while_the_checkpoint_is_written(logdir):
    saver = tfloop.ModelSaver()
    hold = HoldWrite(saver, step=3, release_at=5)
    train_linear([saver, hold], max_epoch=3)
    # Steps 4 and 5 ran while the write of step 3 was held: not on disk, not listed.
    assert hold.seen[4] == hold.seen[5] == (True, False, False)
    # The checkpoint holds the weights of its step, not those of the steps run meanwhile.
    np.testing.assert_array_equal(restore_w(os.path.join(logdir, "model-3")), hold.weights[3])
    assert not np.array_equal(hold.weights[3], hold.weights[6])
    assert tfv1.train.get_checkpoint_state(logdir).all_model_checkpoint_paths == [
        os.path.join(logdir, f"model-{s}") for s in (3, 6, 9)]
    assert saver.last_checkpoint == os.path.join(logdir, "model-9")


def test_the_resume_state_is_written_once_the_checkpoint_is_complete(tmp_path):
    logdir = str(tmp_path / "log")
    saver = tfloop.ModelSaver()
    # Released at step 4: the state of model-3 is taken at step 3, written after step 4 ran.
    hold = HoldWrite(saver, step=3, release_at=4)
    resume_state = os.path.join(logdir, "model-3.resume.json")
    seen = {}

    class See(tfloop.Callback):
        def _trigger_step(self):
            seen[self.global_step] = os.path.exists(resume_state)
    see = See()
    tfloop.logger.set_logger_dir(logdir, action="keep")
    try:
        config = tfloop.AutoResumeTrainConfig(
            model=LinearModel(), data=tfloop.FeedInput(batches(*make_regression_data(12), 4)),
            callbacks=[see, saver, hold], monitors=[], extra_callbacks=[], max_epoch=2)
        tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    finally:
        tfloop.logger.unset_logger_dir()
    assert seen[4] is False
    state = read_resume_state(os.path.join(logdir, "model-3"))
    assert (state["global_step"], state["epoch"], state["local_step"]) == (3, 2, 0)
    np.testing.assert_array_equal(restore_w(os.path.join(logdir, "model-3")), hold.weights[3])
    assert config.state_saver.written == [os.path.join(logdir, f"model-{s}") for s in (3, 6)]


def test_a_save_waits_for_the_write_under_way(logdir, log_warnings):
    saver = tfloop.ModelSaver()
    hold = HoldWrite(saver, step=3)
    train_linear([Arm(hold, 6), saver, hold], max_epoch=2)
    assert hold.released_at == 6        # by the save of step 6, waiting for the write of 3
    assert checkpoint_steps(logdir) == [3, 6]
    np.testing.assert_array_equal(restore_w(os.path.join(logdir, "model-3")), hold.weights[3])
    warnings = [w for w in log_warnings if "still being written" in w]
    assert len(warnings) == 1 and warnings[0].startswith(
        "ModelSaver: at global step 6 the previous checkpoint was still being written; this save "
        "waited ")


def test_sync_mode_writes_in_the_training_thread(logdir):
    saver = tfloop.ModelSaver(background=False)
    seen = {}
    see = tfloop.CallbackFactory(trigger=lambda self: seen.setdefault(
        self.global_step, os.path.exists(os.path.join(logdir, f"model-{self.global_step}.index"))))
    train_linear([saver, see], max_epoch=2)
    assert seen == {3: True, 6: True}
    assert checkpoint_steps(logdir) == [3, 6]


def test_a_failed_background_write_raises_at_the_end_when_asked(logdir):
    block = tfloop.CallbackFactory(trigger=lambda self: os.makedirs(
        os.path.join(logdir, "model-6.index")) if self.global_step == 6 else None)
    with pytest.raises(OSError, match=r"could not save checkpoint .*model-6"):
        train_linear([block, tfloop.ModelSaver(on_error="raise")], max_epoch=2)
    assert tfv1.train.latest_checkpoint(logdir) == os.path.join(logdir, "model-3")


def test_min_saver_copies_the_checkpoint_once_complete(logdir):
    saver = tfloop.ModelSaver()
    hold = HoldWrite(saver, step=3)
    train_linear([saver, hold, Arm(hold, 3), tfloop.MaxSaver("val")], max_epoch=2)
    assert hold.released_at == 3        # MaxSaver waited for the write of its step
    np.testing.assert_array_equal(restore_w(os.path.join(logdir, "max-val")), hold.weights[3])
    assert filecmp.cmp(os.path.join(logdir, "max-val.index"),
                       os.path.join(logdir, "model-3.index"), shallow=False)


# ---- kill -9 during a background write -----------------------------------------------------------
@pytest.mark.slow
def test_kill_9_during_a_background_write_leaves_a_resumable_directory(tmp_path):
    logdir = str(tmp_path / "log")
    reference = str(tmp_path / "reference")
    _, weights, _ = train(reference, max_epoch=4, save_every=1, max_to_keep=3)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tensorflow", "tfloop", "resume_support"])
    outdir = str(tmp_path / "out")
    os.makedirs(outdir)
    process = ctx.Process(target=resume_support.worker,
                          args=(["worker", logdir, outdir, "write:5", "4"],))
    process.start()
    marker = os.path.join(outdir, "blocked")
    deadline = time.monotonic() + scaled_timeout(40)
    while not os.path.exists(marker):
        assert process.is_alive() and time.monotonic() < deadline
        time.sleep(0.02)
    process.kill()
    process.join()
    with open(marker) as f:
        assert f.read() == "writing model-5"
    # The write of model-5 was under way (a partial data file, in a slot: no file of model-5 yet);
    # the earlier ones are intact.
    slots = os.path.join(logdir, ".model-slots")
    assert any(os.path.getsize(os.path.join(slots, n)) for n in os.listdir(slots))
    assert not [n for n in os.listdir(logdir) if n.startswith("model-5")]
    assert find_resume_checkpoint(logdir) == os.path.join(logdir, "model-4")
    assert read_resume_state(os.path.join(logdir, "model-4"))["global_step"] == 4
    _, resumed, _ = train(logdir, max_epoch=4, save_every=1, max_to_keep=3)
    assert resumed.final.tobytes() == weights.final.tobytes()
    assert read_stats(logdir) == read_stats(reference)
    assert find_resume_checkpoint(logdir) == os.path.join(logdir, "model-12")
    # The resumed run deleted the unfinished write's data (as large as the model) and its slots.
    assert not [n for n in os.listdir(logdir) if ".tempstate" in n or n.endswith("-slots")]


def test_the_temporary_files_of_unfinished_writes_are_deleted_at_start(tmp_path, log_lines):
    logdir = tmp_path / "log"
    logdir.mkdir()
    left = [logdir / "model-5.data-00000-of-00001.tempstate1234", logdir / "model-7_temp"]
    left[0].write_text("half of the tensors")
    left[1].mkdir()
    (left[1] / "part-00000-of-00001.data-00000-of-00001").write_text("half")
    kept = [logdir / "model-5.data-00000-of-00001.tempstate-notes.txt", logdir / "other_temp"]
    kept[0].mkdir()     # a directory, not TensorFlow's temporary file
    kept[1].mkdir()     # not a checkpoint's
    train(str(logdir), max_epoch=1, save_every=1)
    assert not any(path.exists() for path in left) and all(path.exists() for path in kept)
    deleted = [line for line in log_lines if "left by a write that did not finish" in line]
    assert len(deleted) == 2


# ---- disk use ------------------------------------------------------------------------------------
class BigModel(LinearModel):
    """LinearModel plus a non-trainable variable of ``mib`` MiB."""

    def __init__(self, mib):
        super().__init__()
        self.mib = mib

    def build_graph(self, x, y):
        tfv1.get_variable("big", [self.mib * 2 ** 18], trainable=False,
                          initializer=tfv1.zeros_initializer())
        return super().build_graph(x, y)


def test_disk_use_of_checkpoints_kept_every_n_hours_is_reported_once(logdir, log_warnings):
    train_linear([tfloop.ModelSaver(max_to_keep=3, keep_checkpoint_every_n_hours=0.125)],
                 model=BigModel(8), max_epoch=2)
    projections = [w for w in log_warnings if "keep_checkpoint_every_n_hours" in w]
    # 8 MiB and a few bytes; the 3 latest + 24 / 0.125 kept one every 7.5 minutes.
    assert projections == [
        f"ModelSaver: besides the 3 latest checkpoints it keeps one every 0.125 h "
        f"(keep_checkpoint_every_n_hours): after 24 h of training, 195 checkpoints of 8.0 MiB = "
        f"1.5 GiB in {logdir}. Raise keep_checkpoint_every_n_hours to keep fewer."]


@pytest.mark.parametrize("kwargs", [
    dict(max_to_keep=None, keep_checkpoint_every_n_hours=0.125),     # keeps all: the user's choice
    dict(keep_checkpoint_every_n_hours=48),                          # none more within a day
    dict(keep_checkpoint_every_n_hours=0.125, mib=1)])               # 202 MiB: a detail line
def test_no_disk_warning_when_nothing_more_is_kept_or_it_is_small(logdir, log_warnings, kwargs):
    mib = kwargs.pop("mib", 8)
    train_linear([tfloop.ModelSaver(**kwargs)], model=BigModel(mib), max_epoch=1)
    assert not [w for w in log_warnings if "keep_checkpoint_every_n_hours" in w]


# ---- a full disk ---------------------------------------------------------------------------------
DISK_MIB = 24
MODEL_MIB = 8


@pytest.fixture
def small_disk(tmp_path):
    """A directory on a tmpfs of ``DISK_MIB`` MiB: a real disk that fills up. Mounting needs
    root; the test is skipped where the mount is refused."""
    path = tmp_path / "disk"
    path.mkdir()
    try:
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MIB}m", "tmpfs",
                                  str(path)], capture_output=True, text=True)
    except OSError as e:
        pytest.skip(f"no mount command: {e}")
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)


class ChunkedModel(LinearModel):
    """LinearModel plus ``MODEL_MIB`` non-trainable variables of 1 MiB each: a write that runs out
    of space fails between two of them, where TensorFlow leaves its temporary file behind."""

    def build_graph(self, x, y):
        for i in range(MODEL_MIB):
            tfv1.get_variable(f"chunk{i}", [2 ** 18], trainable=False,
                              initializer=tfv1.zeros_initializer())
        return super().build_graph(x, y)


def free_bytes(path):
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


class FillDisk(tfloop.Callback):
    """At the trigger of global step 6, fills the disk but for ``MODEL_MIB / 2`` MiB, so that the
    save of step 6 fails midway; when epoch 3 starts (the write of step 6 has finished or
    failed), frees ``MODEL_MIB - 1`` MiB of the filler: a checkpoint fits only if the failed write
    gave its space back."""

    def __init__(self, saver, disk):
        self.saver, self.filler = saver, disk / "filler"
        self.free_before_save = self.free_after_failure = None

    def _trigger(self):
        if self.global_step == 6:
            assert self.saver.checkpoint_at(3) is not None      # waits for the write of step 3
            size = free_bytes(self.filler.parent) - MODEL_MIB * 2 ** 19
            with open(self.filler, "wb") as f:
                f.write(b"\0" * size)
            self.free_before_save = free_bytes(self.filler.parent)

    def _before_epoch(self):
        if self.epoch_num == 3:
            assert self.saver.checkpoint_at(6) is None      # waits for the write: it failed
            self.free_after_failure = free_bytes(self.filler.parent)
            os.truncate(self.filler, os.path.getsize(self.filler) - (MODEL_MIB - 1) * 2 ** 20)


@pytest.mark.parametrize("background", [True, False])
def test_a_write_failed_on_a_full_disk_gives_its_space_back(small_disk, log_lines, background):
    logger.set_logger_dir(str(small_disk), action="keep")
    saver = tfloop.ModelSaver(max_to_keep=1, background=background)
    fill = FillDisk(saver, small_disk)
    train_linear([fill, saver], model=ChunkedModel(), max_epoch=3)
    failed = [line for line in log_lines if "could not save checkpoint" in line]
    assert len(failed) == 1 and "model-6 (global step 6)" in failed[0]
    assert fill.free_after_failure >= fill.free_before_save
    assert not [n for n in os.listdir(small_disk) if "tempstate" in n or n.endswith("_temp")]
    assert tfv1.train.latest_checkpoint(str(small_disk)) == str(small_disk / "model-9")
