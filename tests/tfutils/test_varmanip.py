"""Saving, listing, loading and assigning variable values (varmanip)."""
import numpy as np
import pytest
from support import train_linear

from tfloop.compat import tf, tfv1
from tfloop.tfutils.sessinit import SmartInit, get_model_loader
from tfloop.tfutils.varmanip import (
    SessionUpdate,
    dump_session_params,
    get_all_checkpoints,
    load_checkpoint_vars,
    save_checkpoint_vars,
)

W = np.arange(6, dtype=np.float32).reshape(2, 3)


@pytest.mark.parametrize("name", ["params.npz", "params"])
def test_save_and_load_round_trip_as_npz_or_checkpoint(tmp_path, name):
    path = str(tmp_path / name)
    save_checkpoint_vars({"fc/W:0": W, "step": np.int64(7)}, path)
    values = load_checkpoint_vars(path)
    assert sorted(values) == ["fc/W", "step"]
    np.testing.assert_array_equal(values["fc/W"], W)
    assert values["step"] == 7


def test_save_refuses_npy(tmp_path):
    with pytest.raises(ValueError, match="ends with .npy"):
        save_checkpoint_vars({"w": W}, str(tmp_path / "w.npy"))


def test_get_all_checkpoints_lists_complete_ones_by_step(logdir):
    from tfloop import ModelSaver
    train_linear([ModelSaver(max_to_keep=5)], max_epoch=3)
    found = get_all_checkpoints(logdir)
    assert [step for _, step in found] == [3, 6, 9]
    assert load_checkpoint_vars(found[0][0])["global_step"] == 3
    assert get_all_checkpoints(logdir, prefix="other") == []


def _graph_with_variables():
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("fc/W", [2, 3], initializer=tfv1.zeros_initializer())
        b = tfv1.get_variable("fc/b", [3], initializer=tfv1.zeros_initializer(), trainable=False)
        tfv1.add_to_collection(tfv1.GraphKeys.MODEL_VARIABLES, b)
        tfv1.get_variable("counter", [], dtype=tf.int32, trainable=False)
        sess = tfv1.Session()
        sess.run(tfv1.global_variables_initializer())
    return graph, sess, w, b


def test_dump_session_params_saves_trainable_and_model_variables(tmp_path):
    graph, sess, w, b = _graph_with_variables()
    with graph.as_default(), sess.as_default():
        SessionUpdate(sess, [w, b]).update({"fc/W:0": W, "fc/b:0": np.ones(3, np.float32)})
        graph.finalize()
        dump_session_params(str(tmp_path / "model.npz"))
    values = load_checkpoint_vars(str(tmp_path / "model.npz"))
    assert sorted(values) == ["fc/W", "fc/b"]
    np.testing.assert_array_equal(values["fc/W"], W)


def test_dump_session_params_needs_a_default_session(tmp_path):
    graph, _, _, _ = _graph_with_variables()
    with graph.as_default(), pytest.raises(RuntimeError, match="default session"):
        dump_session_params(str(tmp_path / "model.npz"))


def test_session_update_reshapes_casts_and_skips_mismatches(log_warnings):
    graph, sess, w, b = _graph_with_variables()
    update = SessionUpdate(sess, [w, b], ignore_mismatch=True)
    update.update({"fc/W:0": W.reshape(6).astype(np.float64), "fc/b:0": np.ones(4, np.float32)})
    np.testing.assert_array_equal(sess.run(w), W)
    np.testing.assert_array_equal(sess.run(b), np.zeros(3))
    assert log_warnings == [
        "The value for 'fc/W' is reshaped from (6,) to (2, 3).",
        "The value for 'fc/W' is cast from float64 to float32.",
        "Cannot load an array of shape (4,) into variable 'fc/b' of shape (3,)."]


def test_session_update_errors_name_the_variable():
    graph, sess, w, b = _graph_with_variables()
    with pytest.raises(ValueError, match="shape \\(4,\\) into variable 'fc/b'"):
        SessionUpdate(sess, [b]).update({"fc/b:0": np.ones(4, np.float32)})
    with pytest.raises(KeyError, match="not among the variables"):
        SessionUpdate(sess, [b]).update({"fc/W:0": W})
    with pytest.raises(ValueError, match="cannot be cast safely"):
        SessionUpdate(sess, [w]).update({"fc/W:0": W.astype(np.int32)})


def test_get_model_loader_ignore_mismatch_skips_wrong_shapes(tmp_path):
    path = str(tmp_path / "model.npz")
    save_checkpoint_vars({"fc/W": np.ones([2, 3], np.float32), "fc/b": np.ones(5, np.float32)},
                         path)
    graph, sess, w, b = _graph_with_variables()
    with graph.as_default():
        loader = get_model_loader(path, ignore_mismatch=True)
        loader.setup_graph()
    loader.init(sess)
    np.testing.assert_array_equal(sess.run(w), np.ones([2, 3]))
    np.testing.assert_array_equal(sess.run(b), np.zeros(3))
    with graph.as_default():
        strict = SmartInit(path)
        with pytest.raises(ValueError):
            strict.setup_graph()
            strict.init(sess)
