"""Session initializers restore exactly what they say, pick only complete checkpoints, and report
what they could not match in one table."""
import glob
import logging
import os

import numpy as np
import pytest
from support import RecordingCallback, train_linear

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.varmanip import (
    find_latest_checkpoint,
    get_checkpoint_path,
    is_complete_checkpoint,
    load_chkpt_vars,
    restore_report,
)

W = np.array([[1.0], [2.0], [3.0]], np.float32)


def _build(w_shape=(3, 1), extra=False, momentum=False, scope=None, dtype=tf.float32):
    """A graph with ``w`` (and optionally ``extra``, Momentum slots), like LinearModel's."""
    graph = tf.Graph()
    with graph.as_default():
        with tfv1.variable_scope(scope or ""):
            w = tfv1.get_variable("w", list(w_shape), dtype=dtype,
                                  initializer=tfv1.zeros_initializer())
        tfv1.train.get_or_create_global_step()
        if extra:
            tfv1.get_variable("extra", [2], initializer=tfv1.ones_initializer())
        if momentum:
            loss = tf.reduce_sum(tf.cast(w, tf.float32))
            tfv1.train.MomentumOptimizer(0.1, 0.9).minimize(loss)
    return graph, w


def _save(directory, step, w_value=W, extra_vars=()):
    graph, w = _build(w_value.shape)
    with graph.as_default():
        for name in extra_vars:
            tfv1.get_variable(name, [4], initializer=tfv1.ones_initializer())
        gs = tfv1.train.get_global_step()
        saver = tfv1.train.Saver(max_to_keep=None)
        with tfv1.Session(graph=graph) as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run([w.assign(w_value), gs.assign(step)])
            return saver.save(sess, os.path.join(str(directory), "model"), global_step=step)


def _restore(init, graph, fetch):
    with graph.as_default():
        init.setup_graph()
        with tfv1.Session(graph=graph) as sess:
            sess.run(tfv1.global_variables_initializer())
            init.init(sess)
            return sess.run(fetch)


@pytest.fixture
def ckpt_dir(tmp_path):
    _save(tmp_path, 3, W * 0.5)
    _save(tmp_path, 6, W)
    return tmp_path


@pytest.mark.parametrize("form", ["dir", "prefix", "index", "data", "meta", "state_file"])
def test_saver_restore_accepts_every_form_of_path(ckpt_dir, form):
    path = {"dir": str(ckpt_dir), "prefix": str(ckpt_dir / "model-6"),
            "index": str(ckpt_dir / "model-6.index"), "meta": str(ckpt_dir / "model-6.meta"),
            "data": str(ckpt_dir / "model-6.data-00000-of-00001"),
            "state_file": str(ckpt_dir / "checkpoint")}[form]
    graph, w = _build()
    init = tfloop.SaverRestore(path)
    assert init.path == str(ckpt_dir / "model-6")
    with graph.as_default():
        gs = tfv1.train.get_global_step()
    value, step = _restore(init, graph, [w, gs])
    np.testing.assert_array_equal(value, W)
    assert step == 6


def test_directory_skips_incomplete_newer_checkpoints(ckpt_dir, caplog):
    for step, damage in ((9, "truncate_data"), (12, "no_data"), (15, "truncate_index"),
                         (18, "no_index")):
        prefix = _save(ckpt_dir, step)
        data = glob.glob(prefix + ".data-*")[0]
        if damage == "truncate_data":
            with open(data, "r+b") as f:
                f.truncate(4)
        elif damage == "no_data":
            os.remove(data)
        elif damage == "truncate_index":
            with open(prefix + ".index", "r+b") as f:
                f.truncate(20)
        else:
            os.remove(prefix + ".index")
    with caplog.at_level(logging.WARNING, logger="tfloop"):
        assert get_checkpoint_path(str(ckpt_dir)) == str(ckpt_dir / "model-6")
    message = caplog.text
    assert "model-9 (data files hold" in message
    assert "model-12 (data files missing" in message
    assert "model-15 (its index cannot be read" in message
    assert "model-18 (no model-18.index file)" in message


def test_complete_checkpoint_check():
    assert is_complete_checkpoint("/nonexistent/model-1") == (False, "no model-1.index file")


def test_explicit_incomplete_checkpoint_is_an_error(ckpt_dir):
    prefix = str(ckpt_dir / "model-6")
    with open(glob.glob(prefix + ".data-*")[0], "r+b") as f:
        f.truncate(1)
    with pytest.raises(ValueError, match=r"Checkpoint .*model-6 is incomplete: data files hold 1 "
                                         r"bytes, fewer than the 20 its index needs"):
        tfloop.SaverRestore(prefix)


def test_missing_checkpoint_names_what_is_nearby(ckpt_dir):
    with pytest.raises(FileNotFoundError, match=r"No checkpoint at .*model-7: give a checkpoint "
                                                r"prefix .* Checkpoints nearby: model-3, model-6"):
        tfloop.SaverRestore(str(ckpt_dir / "model-7"))


def test_empty_directory_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="No complete checkpoint in directory"):
        get_checkpoint_path(str(tmp_path))
    assert find_latest_checkpoint(str(tmp_path)) is None


def test_report_lists_both_sides_and_summarises_optimizer_slots(tmp_path, caplog):
    _save(tmp_path, 1, extra_vars=["old_a", "old_b"])
    graph, w = _build(extra=True, momentum=True)
    init = tfloop.SaverRestore(str(tmp_path))
    with caplog.at_level(logging.INFO, logger="tfloop"):
        np.testing.assert_array_equal(_restore(init, graph, w), W)
    lines = init.report.splitlines()
    assert lines[0] == "Variables not restored from {}:".format(tmp_path / "model-1")
    rows = [line.split() for line in lines[3:]]
    assert rows == [["graph", "only", "extra", "[2]"],
                    ["graph", "only", "1", "optimizer", "slot", "variable(s)"],
                    ["checkpoint", "only", "old_a", "[4]"],
                    ["checkpoint", "only", "old_b", "[4]"]]
    assert init.restored == ["global_step", "w"]
    assert "1 variable(s) keep their initial values: extra." in caplog.text


def test_shape_mismatch_is_an_error_naming_both_shapes(tmp_path):
    _save(tmp_path, 1)
    graph, _ = _build(w_shape=(4, 1))
    with graph.as_default(), pytest.raises(
            ValueError, match=r"SaverRestore: 1 variable\(s\) differ in shape or dtype between the "
                              r"graph and .*model-1: w is \[4, 1\] float32 in the graph but "
                              r"\[3, 1\] float32 there. Use SaverRestoreRelaxed"):
        tfloop.SaverRestore(str(tmp_path)).setup_graph()


def test_relaxed_restore_skips_mismatches_and_casts_floats(tmp_path):
    _save(tmp_path, 5, extra_vars=["b"])
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", [3, 1], dtype=tf.float64, initializer=tfv1.zeros_initializer())
        b = tfv1.get_variable("b", [7], initializer=tfv1.zeros_initializer())
        gs = tfv1.train.get_or_create_global_step()
    init = tfloop.SaverRestoreRelaxed(str(tmp_path))
    w_value, b_value, step = _restore(init, graph, [w, b, gs])
    np.testing.assert_array_equal(w_value, W.astype(np.float64))
    np.testing.assert_array_equal(b_value, np.zeros(7))
    assert step == 5
    assert init.report.splitlines()[-1].split() == ["mismatch", "b", "[7]", "float32", "[4]",
                                                    "float32"]


def test_prefix_and_ignore(tmp_path):
    _save(tmp_path, 2)
    graph, w = _build(scope="tower")
    with graph.as_default():
        gs = tfv1.train.get_global_step()
    init = tfloop.SaverRestore(str(tmp_path), prefix="tower")
    np.testing.assert_array_equal(_restore(init, graph, w), W)
    assert init.restored == ["tower/w"]

    graph, w = _build()
    with graph.as_default():
        gs = tfv1.train.get_global_step()
    init = tfloop.SaverRestore(str(tmp_path), ignore=["w:0"])
    w_value, step = _restore(init, graph, [w, gs])
    np.testing.assert_array_equal(w_value, np.zeros((3, 1)))
    assert step == 2 and init.restored == ["global_step"]
    assert "w" not in init.report


def test_dict_restore_names_casts_and_mismatch():
    graph, w = _build(extra=True)
    init = tfloop.DictRestore({"w:0": W.astype(np.float64), "unused": np.zeros(2)})
    np.testing.assert_array_equal(_restore(init, graph, w), W)
    assert init.report.splitlines()[-1].split() == ["checkpoint", "only", "unused", "[2]"]
    graph, w = _build()
    with graph.as_default(), pytest.raises(ValueError, match=r"w is \[3, 1\] float32 in the graph "
                                                             r"but \[3\] float64 there"):
        tfloop.DictRestore({"w": np.zeros(3)}).setup_graph()
    init = tfloop.DictRestore({"w": np.zeros(3)}, ignore_mismatch=True)
    np.testing.assert_array_equal(_restore(init, _build()[0], []), [])


def test_dict_restore_rejects_non_numeric_values():
    with pytest.raises(TypeError, match="DictRestore value for 'w' is not numeric"):
        tfloop.DictRestore({"w": {"a": 1}})
    with pytest.raises(TypeError, match=r"DictRestore needs a dict \{variable name: value\}, got "
                                        r"'list'"):
        tfloop.DictRestore([1, 2])


def test_chain_init_applies_in_order(ckpt_dir):
    graph, w = _build()
    init = tfloop.ChainInit([str(ckpt_dir), {"w": W * 7}])
    np.testing.assert_array_equal(_restore(init, graph, w), W * 7)


def test_chain_init_warns_only_of_variables_that_no_member_restores(tmp_path, log_warnings):
    _save(str(tmp_path), 5)
    graph, w = _build(extra=True)
    with graph.as_default():
        tfv1.get_variable("head", [2], initializer=tfv1.zeros_initializer())
    init = tfloop.SmartInit([str(tmp_path), {"w": W * 7}])
    np.testing.assert_array_equal(_restore(init, graph, w), W * 7)
    assert log_warnings == ["2 variable(s) keep their initial values: extra, head."]


def test_smart_init_and_model_loader(ckpt_dir, tmp_path):
    assert isinstance(tfloop.SmartInit(None), tfloop.JustCurrentSession)
    just = tfloop.JustCurrentSession()
    assert tfloop.SmartInit(just) is just
    assert isinstance(tfloop.SmartInit(str(ckpt_dir)), tfloop.SaverRestore)
    assert isinstance(tfloop.SmartInit(str(ckpt_dir), ignore_mismatch=True),
                      tfloop.SaverRestoreRelaxed)
    npz = str(tmp_path / "values.npz")
    np.savez(npz, w=W * 3)
    graph, w = _build()
    np.testing.assert_array_equal(_restore(tfloop.get_model_loader(npz), graph, w), W * 3)
    with pytest.raises(TypeError, match=r"Cannot initialize a session from 3 \(int\)"):
        tfloop.SmartInit(3)
    with pytest.raises(FileNotFoundError, match=r"No file .*missing.npz"):
        tfloop.SmartInit(str(tmp_path / "missing.npz"))


@pytest.mark.parametrize("nothing", ["", None], ids=["empty-string", "None"])
def test_smart_init_of_nothing_is_no_initialization(nothing):
    # tensorpack documents '' and None as "no initialization" (FasterRCNN's BACKBONE.WEIGHTS='').
    init = tfloop.SmartInit(nothing)
    assert isinstance(init, tfloop.JustCurrentSession)
    graph, w = _build()
    np.testing.assert_array_equal(_restore(init, graph, w), np.zeros_like(W))
    assert train_linear(max_epoch=1, session_init=tfloop.SmartInit(nothing)).global_step == 3


def test_load_chkpt_vars(ckpt_dir):
    values = load_chkpt_vars(str(ckpt_dir))
    assert sorted(values) == ["global_step", "w"]
    np.testing.assert_array_equal(values["w"], W)


def test_report_is_empty_when_everything_matches():
    assert restore_report({}, {}) == ""


def test_restore_through_a_training_run(ckpt_dir):
    log = []
    trainer = train_linear([RecordingCallback("rec", log)], max_epoch=1,
                           session_init=tfloop.SmartInit(str(ckpt_dir)))
    assert log[1] == ("rec", "before_train", 0, 6, -1, None)
    assert trainer.global_step == 9


def test_a_bit_flipped_data_file_is_an_error_naming_the_checkpoint(tmp_path):
    prefix = _save(tmp_path, 5)
    data = prefix + ".data-00000-of-00001"
    content = bytearray(open(data, "rb").read())
    content[3] ^= 0xFF
    open(data, "wb").write(bytes(content))
    graph, w = _build()
    with pytest.raises(ValueError, match=rf"Checkpoint {prefix} is corrupt \(.*\): its files "
                                         r"model-5.data-00000-of-00001, model-5.index were "
                                         r"changed"):
        _restore(tfloop.SaverRestore(prefix), graph, w)


def test_a_checkpoint_of_another_model_is_refused_listing_the_names(tmp_path):
    graph = tf.Graph()
    with graph.as_default():
        tfv1.get_variable("conv/W", [3, 3])
        gs = tfv1.train.get_or_create_global_step()
        with tfv1.Session(graph=graph) as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run(gs.assign(1000))
            prefix = tfv1.train.Saver().save(sess, str(tmp_path / "other"), global_step=1000)
    with pytest.raises(ValueError, match=rf"SaverRestore: {prefix} holds none of the model's "
                                         r"trainable variables.*Trainable variables missing "
                                         r"there: w\. Its variables not in the graph: conv/W\."):
        train_linear(session_init=tfloop.SaverRestore(prefix), max_epoch=1)


def test_a_dict_restore_that_restores_nothing_is_an_error():
    with pytest.raises(ValueError, match=r"DictRestore: a dict of 1 value\(s\) holds none of the "
                                         r"model's trainable variables.*not in the graph: wieght"):
        train_linear(session_init=tfloop.DictRestore({"wieght": W}), max_epoch=1)


def test_a_chain_fails_only_when_no_member_holds_the_model(ckpt_dir):
    trainer = train_linear(session_init=tfloop.ChainInit([{"wieght": W}, str(ckpt_dir)]),
                           max_epoch=1)
    assert trainer.global_step == 6 + 3
    with pytest.raises(ValueError, match="holds none of the model's trainable variables"):
        train_linear(session_init=tfloop.ChainInit([{"wieght": W}, {"b": W}]), max_epoch=1)


@pytest.mark.parametrize("content", [b"garbage", b"PK\x03\x04broken zip"])
def test_a_corrupt_npz_is_an_error_naming_the_file(tmp_path, content):
    path = tmp_path / "weights.npz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"{path} is not a readable .npz file"):
        tfloop.SmartInit(str(path))


def test_checkpoint_only_leftovers_are_reported_at_debug_graph_side_ones_at_info(tmp_path,
                                                                                  tfloop_log):
    _save(tmp_path, 1, extra_vars=["old_a"])
    graph, w = _build()
    init = tfloop.SaverRestore(str(tmp_path))
    logging.getLogger("tfloop").setLevel(logging.DEBUG)
    try:
        np.testing.assert_array_equal(_restore(init, graph, w), W)
    finally:
        logging.getLogger("tfloop").setLevel(logging.INFO)
    assert "checkpoint only" in init.report
    assert [level for level, m in tfloop_log if m.startswith("Variables not restored")] == [
        "DEBUG"]
    tfloop_log.clear()
    graph, w = _build(extra=True)
    _restore(tfloop.SaverRestore(str(tmp_path)), graph, w)
    assert [level for level, m in tfloop_log if m.startswith("Variables not restored")] == [
        "INFO"]
