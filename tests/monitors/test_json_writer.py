"""JSONWriter: stats.json contents, records appended in place, failed writes, resuming and
backups."""
import glob
import json
import os

import pandas as pd
import pytest
from support import train_linear

from tfloop import Callback, JSONWriter, SessionInit, get_global_step_var


class PutStats(Callback):
    """Puts ``step`` (= global_step) after every step and ``epoch`` (= 10 * epoch) every epoch."""

    def _trigger_step(self):
        self.trainer.monitors.put_scalar("step", self.global_step)

    def _trigger_epoch(self):
        self.trainer.monitors.put_scalar("epoch", self.epoch_num * 10.0)


def stats(logdir):
    with open(os.path.join(logdir, "stats.json")) as f:
        return json.load(f)


def test_one_record_per_epoch_with_every_scalar_of_the_epoch(logdir):
    train_linear([PutStats()], monitors=[JSONWriter()])
    assert stats(logdir) == [
        {"epoch_num": 1, "global_step": 3, "step": 3, "epoch": 10.0},
        {"epoch_num": 2, "global_step": 6, "step": 6, "epoch": 20.0},
    ]


def test_every_k_steps_adds_records_between_epochs(logdir):
    train_linear([PutStats()], monitors=[JSONWriter(every_k_steps=2)])
    assert stats(logdir) == [
        {"epoch_num": 1, "global_step": 2, "step": 2},
        {"epoch_num": 1, "global_step": 3, "step": 3, "epoch": 10.0},
        {"epoch_num": 2, "global_step": 4, "step": 4},
        {"epoch_num": 2, "global_step": 6, "step": 6, "epoch": 20.0},
    ]


def test_round_trips_through_json_and_pandas(logdir):
    train_linear([PutStats()], monitors=[JSONWriter()], max_epoch=3)
    frame = pd.read_json(os.path.join(logdir, "stats.json"))
    assert frame["epoch_num"].tolist() == [1, 2, 3]
    assert frame["global_step"].tolist() == [3, 6, 9]
    assert frame["epoch"].tolist() == [10.0, 20.0, 30.0]
    assert frame.to_dict("records") == stats(logdir)


def test_resumed_run_appends_to_the_predecessor_epoch(logdir, tfloop_log):
    train_linear([PutStats()], monitors=[JSONWriter()])
    train_linear([PutStats()], monitors=[JSONWriter()], starting_epoch=3, max_epoch=4)
    assert [(r["epoch_num"], r["epoch"]) for r in stats(logdir)] == [
        (1, 10.0), (2, 20.0), (3, 30.0), (4, 40.0)]
    assert any("with 2 records up to epoch 2: appending to it" in m for _, m in tfloop_log)
    assert glob.glob(os.path.join(logdir, "stats.json.*")) == []


def test_mismatched_file_is_backed_up_with_a_log_line(logdir, tfloop_log):
    train_linear([PutStats()], monitors=[JSONWriter()], max_epoch=3)
    old = stats(logdir)
    train_linear([PutStats()], monitors=[JSONWriter()], max_epoch=1)
    backups = glob.glob(os.path.join(logdir, "stats.json.*.bak"))
    assert len(backups) == 1
    with open(backups[0]) as f:
        assert json.load(f) == old
    assert [r["epoch_num"] for r in stats(logdir)] == [1]
    warning = [m for level, m in tfloop_log if level == "WARNING"][-1]
    assert ("last record is from epoch 3 (global step 9), but training starts at epoch 1 "
            "(global step 0)") in warning
    assert backups[0] in warning


class RestoreGlobalStep(SessionInit):
    """Sets the global step as a checkpoint restore would."""

    def __init__(self, step):
        self.step = step

    def _setup_graph(self):
        self.assign = get_global_step_var().assign(self.step)

    def _run_init(self, sess):
        sess.run(self.assign)


@pytest.mark.parametrize("last_step, kept", [(4, True), (5, True), (6, False)])
def test_run_resumed_mid_epoch_appends_after_its_own_step_records(logdir, last_step, kept):
    old = [{"epoch_num": 1, "global_step": 3, "step": 3},
           {"epoch_num": 2, "global_step": last_step, "step": last_step}]
    with open(os.path.join(logdir, "stats.json"), "w") as f:
        json.dump(old, f)
    train_linear([PutStats()], monitors=[JSONWriter()], starting_epoch=2, max_epoch=2,
                 session_init=RestoreGlobalStep(5))
    new = [{"epoch_num": 2, "global_step": 8, "step": 8, "epoch": 20.0}]
    assert stats(logdir) == (old + new if kept else new)
    assert len(glob.glob(os.path.join(logdir, "stats.json.*.bak"))) == (0 if kept else 1)


def test_unreadable_file_is_backed_up(logdir, tfloop_log):
    with open(os.path.join(logdir, "stats.json"), "w") as f:
        f.write('[{"epoch_num": 1, "glo')
    train_linear([PutStats()], monitors=[JSONWriter()], max_epoch=1)
    assert [r["epoch_num"] for r in stats(logdir)] == [1]
    backups = glob.glob(os.path.join(logdir, "stats.json.*.bak"))
    with open(backups[0]) as f:
        assert f.read() == '[{"epoch_num": 1, "glo'
    assert any("cannot be read" in m and "not valid JSON" in m for _, m in tfloop_log)


class FullDisk(Callback):
    """Makes every write of stats.json fail (no space left) while training runs an epoch listed in
    ``epochs``: the in-place appends (``os.pwrite``) and the whole-file rewrites
    (``os.replace``)."""

    def __init__(self, monkeypatch, epochs):
        self.epochs = epochs
        self.full = False
        real_pwrite, real_replace = os.pwrite, os.replace

        def pwrite(fd, data, offset):
            if self.full:
                raise OSError(28, "No space left on device")
            return real_pwrite(fd, data, offset)

        def replace(src, dst):
            if self.full and dst.endswith("stats.json"):
                raise OSError(28, "No space left on device")
            return real_replace(src, dst)
        monkeypatch.setattr(os, "pwrite", pwrite)
        monkeypatch.setattr(os, "replace", replace)

    def _before_epoch(self):
        self.full = self.epoch_num in self.epochs

    def _after_train(self):
        self.full = False


def test_records_are_appended_in_place_and_the_end_of_training_compacts_the_file(logdir):
    sizes = []

    class Size(Callback):
        def _before_epoch(self):
            path = os.path.join(logdir, "stats.json")
            if os.path.exists(path):
                sizes.append((os.stat(path).st_ino, os.path.getsize(path)))

    train_linear([PutStats(), Size()], monitors=[JSONWriter()], max_epoch=3)
    # One file (no rename after the first record), of constant size: the records overwrite the
    # blank lines reserved before the closing bracket.
    assert len(set(sizes)) == 1
    with open(os.path.join(logdir, "stats.json")) as f:
        assert f.read() == (
            '[\n{"epoch_num": 1, "global_step": 3, "step": 3, "epoch": 10.0}\n'
            ',{"epoch_num": 2, "global_step": 6, "step": 6, "epoch": 20.0}\n'
            ',{"epoch_num": 3, "global_step": 9, "step": 9, "epoch": 30.0}\n]\n')


def test_a_failed_write_leaves_the_previous_records_complete(logdir, monkeypatch):
    full = FullDisk(monkeypatch, epochs={2, 3})
    with pytest.raises(OSError, match="No space left"):
        train_linear([PutStats(), full], monitors=[JSONWriter(on_error="raise")], max_epoch=3)
    assert stats(logdir) == [{"epoch_num": 1, "global_step": 3, "step": 3, "epoch": 10.0}]
    assert sorted(os.listdir(logdir)) == [".tfloop.lock", "log.log", "stats.json", "status.json"]


def test_a_failed_write_is_logged_and_the_next_one_writes_every_record(logdir, monkeypatch,
                                                                      tfloop_log):
    full = FullDisk(monkeypatch, epochs={2})
    train_linear([PutStats(), full], monitors=[JSONWriter()], max_epoch=3)
    assert [r["epoch_num"] for r in stats(logdir)] == [1, 2, 3]
    errors = [m for level, m in tfloop_log if level == "ERROR"]
    assert len(errors) == 1
    assert "stats.json at global step 6" in errors[0] and "No space left on device" in errors[0]
    assert any("wrote" in m and "again, with every record" in m for _, m in tfloop_log)
    assert sorted(os.listdir(logdir)) == [".tfloop.lock", "log.log", "stats.json", "status.json"]


def test_a_burst_of_failed_writes_is_logged_once(logdir, monkeypatch, tfloop_log):
    full = FullDisk(monkeypatch, epochs={2, 3, 4})
    train_linear([PutStats(), full], monitors=[JSONWriter()], max_epoch=5)
    assert [r["epoch_num"] for r in stats(logdir)] == [1, 2, 3, 4, 5]
    assert len([m for level, m in tfloop_log if level == "ERROR"]) == 1


def test_a_file_cut_short_in_its_last_record_keeps_the_records_before_it(logdir, tfloop_log):
    with open(os.path.join(logdir, "stats.json"), "w") as f:
        f.write('[\n{"epoch_num": 1, "global_step": 3, "step": 3}\n,{"epoch_num": 2, "glo\n\n]\n')
    train_linear([PutStats()], monitors=[JSONWriter()], starting_epoch=2, max_epoch=2)
    assert [(r["epoch_num"], r["global_step"]) for r in stats(logdir)] == [(1, 3), (2, 3)]
    assert any("ends in an incomplete record" in m and "keeping its 1 complete records" in m
               for _, m in tfloop_log)
    assert glob.glob(os.path.join(logdir, "stats.json.*")) == []


def test_bad_on_error_is_rejected():
    with pytest.raises(ValueError, match="on_error must be 'log' or 'raise', got 'ignore'"):
        JSONWriter(on_error="ignore")


class StopInTriggerEpoch(Callback):
    def _trigger_epoch(self):
        from tfloop import StopTraining
        raise StopTraining("early stop")


def test_stopping_in_trigger_epoch_still_records_the_finished_epoch(logdir):
    train_linear([PutStats(), StopInTriggerEpoch()], monitors=[JSONWriter()], max_epoch=5)
    assert stats(logdir) == [{"epoch_num": 1, "global_step": 3, "step": 3, "epoch": 10.0}]


def test_scalars_put_after_training_join_the_last_record(logdir):
    class PutAtEnd(Callback):
        def _after_train(self):
            self.trainer.monitors.put_scalar("final", 1.25)

    train_linear([PutStats(), PutAtEnd()], monitors=[JSONWriter()])
    assert stats(logdir)[-1] == {"epoch_num": 2, "global_step": 6, "step": 6, "epoch": 20.0,
                                 "final": 1.25}
    assert len(stats(logdir)) == 2


def test_scalars_of_an_unfinished_epoch_are_not_recorded_and_say_so(logdir, tfloop_log):
    class StopAtStep4(Callback):
        def _trigger_step(self):
            if self.global_step == 4:
                from tfloop import StopTraining
                raise StopTraining("stop mid-epoch")

    train_linear([PutStats(), StopAtStep4()], monitors=[JSONWriter()])
    assert [r["epoch_num"] for r in stats(logdir)] == [1]
    assert "JSONWriter: the scalars of unfinished epoch 2 (step) are not recorded." in [
        m for _, m in tfloop_log]


def test_load_existing_json_and_epoch_number(logdir, tmp_path):
    assert JSONWriter.load_existing_json() is None
    assert JSONWriter.load_existing_epoch_number(str(tmp_path)) is None
    train_linear([PutStats()], monitors=[JSONWriter()])
    assert JSONWriter.load_existing_json() == stats(logdir)
    assert JSONWriter.load_existing_epoch_number(logdir) == 2
    with open(os.path.join(str(tmp_path), "stats.json"), "w") as f:
        f.write('{"epoch_num": 1}')
    with pytest.raises(ValueError, match="not a JSON list of records"):
        JSONWriter.load_existing_json(str(tmp_path))


def test_scalar_named_like_a_record_key_is_rejected(logdir):
    class PutGlobalStep(Callback):
        def _trigger_epoch(self):
            self.trainer.monitors.put_scalar("global_step", 1.0)

    with pytest.raises(ValueError, match="cannot be named 'global_step'"):
        train_linear([PutGlobalStep()], monitors=[JSONWriter()], max_epoch=1)


@pytest.mark.parametrize("every_k_steps", [0, -2, 1.5, True])
def test_bad_every_k_steps_is_rejected(every_k_steps):
    with pytest.raises(ValueError, match="every_k_steps must be a positive int"):
        JSONWriter(every_k_steps=every_k_steps)


def test_a_file_of_records_without_the_training_position_is_backed_up(logdir, log_warnings):
    path = os.path.join(logdir, "stats.json")
    with open(path, "w") as f:
        json.dump([{"loss": 1.0}, {"loss": 0.5}], f)
    train_linear([PutStats()], monitors=[JSONWriter()], max_epoch=1)
    assert stats(logdir) == [{"epoch_num": 1, "global_step": 3, "step": 3, "epoch": 10.0}]
    backups = [n for n in os.listdir(logdir) if n.startswith("stats.json.") and
               n.endswith(".bak")]
    assert len(backups) == 1
    with open(os.path.join(logdir, backups[0])) as f:
        assert json.load(f) == [{"loss": 1.0}, {"loss": 0.5}]
    assert "its records lack integer epoch_num and global_step" in log_warnings[0]


def test_a_directory_in_place_of_the_file_is_logged_and_training_goes_on(logdir, tfloop_log):
    os.mkdir(os.path.join(logdir, "stats.json"))
    trainer = train_linear([PutStats()], monitors=[JSONWriter()], max_epoch=3)
    assert trainer.global_step == 9
    errors = [m for level, m in tfloop_log if level == "ERROR"]
    assert errors[0].startswith("JSONWriter: {} exists but is not a file".format(
        os.path.join(logdir, "stats.json")))
    assert len(errors) == 2 and "could not write" in errors[1]
    assert os.path.isdir(os.path.join(logdir, "stats.json"))
