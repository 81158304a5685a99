"""ModelSaver, MinSaver and MaxSaver: files on disk after real runs, restored into fresh graphs."""
import filecmp
import json
import os

import numpy as np
import pytest
from support import train_linear

import tfloop
from tfloop.compat import tfv1


class ScriptedStat(tfloop.Callback):
    """Puts ``values[i]`` as ``name`` at the i-th trigger; records the weights at that moment."""

    def __init__(self, values, name="val"):
        self.values = list(values)
        self.name = name
        self.weights = {}

    def _setup_graph(self):
        self.w = self.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)[0]

    def _trigger(self):
        self.weights[self.global_step] = self.trainer.sess.run(self.w)
        self.trainer.monitors.put_scalar(self.name, self.values.pop(0))


class FinalWeights(tfloop.Callback):
    def _setup_graph(self):
        self.w = self.graph.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)[0]

    def _after_train(self):
        self.value = self.trainer.sess.run(self.w)


def restore(prefix):
    """The (w, global_step) restored from checkpoint ``prefix`` into a fresh graph by a Saver."""
    graph = tfv1.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", [3, 1])
        step = tfv1.train.get_or_create_global_step()
        saver = tfv1.train.Saver()
        with tfv1.Session(graph=graph) as sess:
            saver.restore(sess, prefix)
            return sess.run(w), int(sess.run(step))


def checkpoint_steps(directory, prefix="model-"):
    return sorted(int(name[len(prefix):-len(".index")]) for name in os.listdir(directory)
                  if name.startswith(prefix) and name.endswith(".index"))


# ---- ModelSaver ----------------------------------------------------------------------------------
def test_model_saver_writes_checkpoints_state_file_and_meta_graph(logdir):
    saver, final = tfloop.ModelSaver(), FinalWeights()
    train_linear([saver, final], max_epoch=3)
    assert checkpoint_steps(logdir) == [3, 6, 9]
    for step in (3, 6, 9):
        assert os.path.exists(os.path.join(logdir, f"model-{step}.data-00000-of-00001"))
    assert saver.last_checkpoint == os.path.join(logdir, "model-9")
    assert tfv1.train.latest_checkpoint(logdir) == os.path.join(logdir, "model-9")
    with open(os.path.join(logdir, "checkpoint")) as f:
        assert 'model_checkpoint_path: "model-9"' in f.read()    # relative: the dir can move
    w, step = restore(os.path.join(logdir, "model-9"))
    assert step == 9
    np.testing.assert_array_equal(w, final.value)
    assert not np.allclose(w, 0)
    # The meta graph is written once, to a file of its own, and restores the graph.
    assert [n for n in os.listdir(logdir) if n.endswith(".meta")] == ["graph-3.meta"]
    graph = tfv1.Graph()
    with graph.as_default(), tfv1.Session(graph=graph) as sess:
        tfv1.train.import_meta_graph(os.path.join(logdir, "graph-3.meta")).restore(
            sess, os.path.join(logdir, "model-9"))
        w_var = [v for v in tfv1.global_variables() if v.op.name == "w"][0]
        np.testing.assert_array_equal(sess.run(w_var), final.value)


def test_max_to_keep_counts_checkpoints_of_earlier_runs(logdir):
    train_linear([tfloop.ModelSaver(max_to_keep=2)], max_epoch=3)
    assert checkpoint_steps(logdir) == [6, 9]
    train_linear([tfloop.ModelSaver(max_to_keep=2)], steps_per_epoch=2, max_epoch=2)
    assert checkpoint_steps(logdir) == [2, 4]
    state = tfv1.train.get_checkpoint_state(logdir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == ["model-2", "model-4"]


@pytest.mark.slow
def test_periodic_saver_saves_a_final_checkpoint_once(logdir, log_lines):
    train_linear([tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=4)], max_epoch=2)
    assert checkpoint_steps(logdir) == [4, 6]             # 6: at the end of training
    log_lines.clear()
    train_linear([tfloop.PeriodicTrigger(tfloop.ModelSaver(), every_k_steps=3,
                                         every_k_epochs=1)], max_epoch=2)
    assert sum("Model saved to" in line for line in log_lines) == 2    # steps 3 and 6, once each


def test_checkpoint_dir_argument(tmp_path):
    directory = tmp_path / "ckpt" / "nested"
    train_linear([tfloop.ModelSaver(checkpoint_dir=str(directory))], max_epoch=1)
    assert checkpoint_steps(str(directory)) == [3]


def test_no_directory_is_a_clear_error_at_setup():
    with pytest.raises(ValueError, match=r"checkpoint_dir=.*set_logger_dir"):
        train_linear([tfloop.ModelSaver()], max_epoch=1)


def test_uncreatable_directory_is_a_clear_error_at_setup(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(OSError, match="cannot create its checkpoint directory"):
        train_linear([tfloop.ModelSaver(checkpoint_dir=str(tmp_path / "file" / "ckpt"))])


@pytest.mark.parametrize("kwargs", [{"max_to_keep": -1}, {"keep_checkpoint_every_n_hours": 0},
                                    {"var_collections": []}, {"on_error": "ignore"}])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        tfloop.ModelSaver(**kwargs)


class BlockCheckpoint(tfloop.Callback):
    """At its first trigger, puts a directory where the checkpoint ``model-<step>.index`` goes, so
    that TF's write of that checkpoint really fails."""

    def __init__(self, directory):
        self.directory = directory

    def _trigger(self):
        if self.epoch_num == 1:
            os.makedirs(os.path.join(self.directory, f"model-{self.global_step}.index"))


def test_failed_save_is_logged_and_training_continues(logdir, log_lines):
    saver = tfloop.ModelSaver()
    trainer = train_linear([BlockCheckpoint(logdir), saver], max_epoch=3)
    assert trainer.global_step == 9
    errors = [line for line in log_lines if "could not save checkpoint" in line]
    assert len(errors) == 1
    assert os.path.join(logdir, "model-3") in errors[0] and "global step 3" in errors[0]
    assert "Training continues" in errors[0]
    assert tfv1.train.latest_checkpoint(logdir) == os.path.join(logdir, "model-9")
    assert saver.checkpoint_at(3) is None and saver.checkpoint_at(6).endswith("model-6")


def test_failed_save_raises_when_asked(logdir):
    with pytest.raises(OSError, match=r"could not save checkpoint .*model-3"):
        train_linear([BlockCheckpoint(logdir), tfloop.ModelSaver(on_error="raise")], max_epoch=2)


# ---- MinSaver / MaxSaver -------------------------------------------------------------------------
ORDERS = {
    "saver, stat, min": lambda s, m, v: [s, v, m],
    "stat, min, saver": lambda s, m, v: [v, m, s],     # no checkpoint of the step yet: own save
    "min, stat, saver": lambda s, m, v: [m, v, s],     # the stat comes later in the same round
    "min, saver, stat": lambda s, m, v: [m, s, v],     # the order of the seed documents
    "stat, min, no saver": lambda s, m, v: [v, m],
    "min, stat, no saver": lambda s, m, v: [m, v],     # kept before the next step changes weights
}


@pytest.mark.slow
@pytest.mark.parametrize("values", [[0.5, 0.2, 0.4, 0.3], [0.5, 0.4, 0.3, 0.1]],
                         ids=["best-mid", "best-last"])
@pytest.mark.parametrize("order", list(ORDERS))
def test_min_saver_keeps_the_checkpoint_of_the_best_step(logdir, order, values):
    stat, min_saver, saver = ScriptedStat(values), tfloop.MinSaver("val"), tfloop.ModelSaver()
    train_linear(ORDERS[order](saver, min_saver, stat), max_epoch=4)
    best_step = 3 * (values.index(min(values)) + 1)
    w, step = restore(os.path.join(logdir, "min-val"))
    assert step == best_step
    np.testing.assert_array_equal(w, stat.weights[best_step])
    assert not np.array_equal(w, stat.weights[12 if best_step != 12 else 9])
    with open(os.path.join(logdir, "min-val.json")) as f:
        assert json.load(f) == {"stat": "val", "mode": "min", "checkpoints": [
            {"rank": 1, "checkpoint": "min-val", "global_step": best_step, "value": min(values)}]}
    assert (min_saver.best, min_saver.best_step) == (min(values), best_step)
    if order in ("saver, stat, min", "min, saver, stat"):      # copied from ModelSaver's files
        assert filecmp.cmp(os.path.join(logdir, "min-val.index"),
                           os.path.join(logdir, f"model-{best_step}.index"), shallow=False)
    assert not [n for n in os.listdir(logdir) if ".tmp-" in n]


def test_max_saver_keeps_the_maximum(logdir):
    stat = ScriptedStat([0.1, 0.7, 0.3], name="acc")
    train_linear([tfloop.MaxSaver("acc"), stat, tfloop.ModelSaver()], max_epoch=3)
    w, step = restore(os.path.join(logdir, "max-acc"))
    assert step == 6
    np.testing.assert_array_equal(w, stat.weights[6])
    assert not os.path.exists(os.path.join(logdir, "min-acc.index"))


def test_top_k_keeps_the_k_best_ranked(logdir, log_lines):
    values = [0.5, 0.3, 0.4, 0.1, 0.35, 0.6]
    stat, min_saver = ScriptedStat(values), tfloop.MinSaver("val", top_k=3)
    train_linear([min_saver, tfloop.ModelSaver(), stat], max_epoch=6)
    expected = [(12, 0.1), (6, 0.3), (15, 0.35)]
    assert min_saver.top == expected
    for rank, (step, _) in enumerate(expected, 1):
        w, restored_step = restore(os.path.join(logdir, f"min-val-{rank}"))
        assert restored_step == step
        np.testing.assert_array_equal(w, stat.weights[step])
    assert not os.path.exists(os.path.join(logdir, "min-val-4.index"))
    assert not os.path.exists(os.path.join(logdir, "min-val.index"))
    with open(os.path.join(logdir, "min-val.json")) as f:
        kept = json.load(f)["checkpoints"]
    assert [(k["rank"], k["checkpoint"], k["global_step"], k["value"]) for k in kept] == [
        (1, "min-val-1", 12, 0.1), (2, "min-val-2", 6, 0.3), (3, "min-val-3", 15, 0.35)]
    assert sum("is the best #" in line for line in log_lines) == 5    # all but 0.6 entered


class MidEpochStat(tfloop.Callback):
    """Puts the stat after step 1 of each epoch: its weights are gone by the epoch's end."""

    def _trigger_step(self):
        if self.local_step == 0:
            self.trainer.monitors.put_scalar("val", 1.0 / self.global_step)


def test_a_best_value_whose_weights_are_gone_is_logged_not_skipped_silently(logdir, log_lines):
    min_saver = tfloop.MinSaver("val")
    train_linear([MidEpochStat(), min_saver], max_epoch=2)
    errors = [line for line in log_lines if "no checkpoint of that step exists" in line]
    assert len(errors) == 2 and "global step 1 " in errors[0] and "global step 4 " in errors[1]
    assert not os.path.exists(os.path.join(logdir, "min-val.index"))
    assert min_saver.top == []
    assert (min_saver.best, min_saver.best_step) == (0.25, 4)     # seen, though not kept


def test_a_failed_copy_is_logged_and_training_continues(logdir, log_lines):
    os.makedirs(os.path.join(logdir, "min-val.index"))      # a directory in the way
    trainer = train_linear([tfloop.ModelSaver(), ScriptedStat([0.5, 0.2]), tfloop.MinSaver("val")],
                           max_epoch=2)
    assert trainer.global_step == 6
    errors = [line for line in log_lines if "could not keep the checkpoint" in line]
    assert len(errors) == 2 and os.path.join(logdir, "min-val") in errors[0]
    assert not [n for n in os.listdir(logdir) if ".tmp-" in n]


def test_min_saver_state_round_trips_into_a_fresh_instance(logdir):
    min_saver = tfloop.MinSaver("val", top_k=2)
    train_linear([tfloop.ModelSaver(), ScriptedStat([0.5, 0.2, 0.4]), min_saver], max_epoch=3)
    state = json.loads(json.dumps(min_saver.state_dict()))
    fresh = tfloop.MinSaver("val", top_k=2)
    fresh.load_state_dict(state)
    assert fresh.top == min_saver.top == [(6, 0.2), (9, 0.4)]
    assert (fresh.best, fresh.best_step, fresh.last_seen_step) == (0.2, 6, 9)
    assert fresh.state_dict() == min_saver.state_dict()


@pytest.mark.parametrize("kwargs", [{"top_k": 0}, {"filename": "a/b"}, {"monitor_stat": ""}])
def test_min_saver_bad_arguments(kwargs):
    kwargs = dict({"monitor_stat": "val"}, **kwargs)
    with pytest.raises(ValueError):
        tfloop.MinSaver(**kwargs)


def test_min_saver_names_files_after_the_stat(tmp_path):
    saver = tfloop.MinSaver("val/error", checkpoint_dir=str(tmp_path))
    assert saver.filename == "min-val_error"
    assert tfloop.MaxSaver("acc", filename="best").filename == "best"


def test_max_saver_second_positional_is_the_file_name_as_in_tensorpack(logdir):
    stat = ScriptedStat([0.1, 0.7, 0.3], name="acc")
    saver = tfloop.MaxSaver("acc", "best")
    assert (saver.mode, saver.filename) == ("max", "best")
    train_linear([saver, stat, tfloop.ModelSaver()], max_epoch=3)
    w, step = restore(os.path.join(logdir, "best"))
    assert step == 6
    np.testing.assert_array_equal(w, stat.weights[6])
    assert tfloop.MinSaver("acc", True, "top").mode == "max"
    with pytest.raises(TypeError):
        tfloop.MaxSaver("acc", "best", None, 3)   # top_k is keyword-only


def test_min_delta_a_value_must_beat_the_kept_one_by_more(logdir, log_lines):
    stat = ScriptedStat([0.5, 0.45, 0.3, 0.25])
    min_saver = tfloop.MinSaver("val", min_delta=0.1)
    train_linear([tfloop.ModelSaver(), stat, min_saver], max_epoch=4)
    assert min_saver.top == [(9, 0.3)]
    assert (min_saver.best, min_saver.best_step) == (0.3, 9)
    w, step = restore(os.path.join(logdir, "min-val"))
    assert step == 9
    np.testing.assert_array_equal(w, stat.weights[9])
    assert sum("is the best; kept as" in line for line in log_lines) == 2     # 0.5 and 0.3


def test_mode_max_is_reverse_true(logdir):
    by_mode, by_reverse = tfloop.MinSaver("acc", mode="max"), tfloop.MinSaver("acc", reverse=True)
    for saver in (by_mode, by_reverse, tfloop.MaxSaver("acc")):
        assert (saver.mode, saver.reverse, saver.filename) == ("max", True, "max-acc")
    assert (tfloop.MinSaver("acc").mode, tfloop.MinSaver("acc").reverse) == ("min", False)
    stat = ScriptedStat([0.1, 0.7, 0.3], name="acc")
    train_linear([by_mode, stat, tfloop.ModelSaver()], max_epoch=3)
    assert by_mode.top == [(6, 0.7)]


@pytest.mark.parametrize("make, match", [
    (lambda: tfloop.MinSaver("acc", reverse=True, mode="max"),
     r"MinSaver got both reverse=True and mode='max'"),
    (lambda: tfloop.MinSaver("acc", "best"), r"MinSaver: reverse must be True .* got 'best'"),
    # As in tensorpack, MaxSaver has no reverse (nor mode): it always keeps the maximum.
    (lambda: tfloop.MaxSaver("acc", reverse=True), "unexpected keyword argument 'reverse'"),
    (lambda: tfloop.MaxSaver("acc", mode="min"), "unexpected keyword argument 'mode'"),
])
def test_direction_given_twice_or_wrongly_is_a_type_error(make, match):
    with pytest.raises(TypeError, match=match):
        make()


def test_tensorpack_module_path_holds_all_three_savers():
    from tfloop.callbacks import saver
    assert (saver.ModelSaver, saver.MinSaver, saver.MaxSaver) == (
        tfloop.ModelSaver, tfloop.MinSaver, tfloop.MaxSaver)
