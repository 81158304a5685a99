"""tensorpack's small graph helpers at their paths: collections (backup, restore, freeze),
print_stat / rms / psnr, op dependencies, session creators."""
import math
import socket

import numpy as np
import pytest

from tfloop.compat import is_tfv2, tf, tfv1
from tfloop.tfutils.collect_env import parse_TF_build_info
from tfloop.tfutils.collection import backup_collection, freeze_collection, restore_collection
from tfloop.tfutils.dependency import dependency_of_fetches, dependency_of_targets
from tfloop.tfutils.distributed import get_distributed_session_creator
from tfloop.tfutils.sesscreate import (
    NewSessionCreator,
    ReuseSessionCreator,
    SessionCreatorAdapter,
)
from tfloop.tfutils.symbolic_functions import print_stat, psnr, rms

SUMMARIES = tfv1.GraphKeys.SUMMARIES


def test_freeze_collection_restores_the_collections_also_after_an_error():
    with tf.Graph().as_default():
        x = tf.constant(1.0)
        tfv1.summary.scalar("kept", x)
        with freeze_collection([SUMMARIES, "MINE"]):
            tfv1.summary.scalar("dropped", x)
            tfv1.add_to_collection("MINE", x)
            assert len(tfv1.get_collection(SUMMARIES)) == 2
        assert [s.op.name for s in tfv1.get_collection(SUMMARIES)] == ["kept"]
        assert tfv1.get_collection("MINE") == []
        with pytest.raises(RuntimeError), freeze_collection([SUMMARIES]):
            tfv1.summary.scalar("dropped_too", x)
            raise RuntimeError("in the block")
        assert [s.op.name for s in tfv1.get_collection(SUMMARIES)] == ["kept"]


def test_backup_and_restore_every_collection_by_default():
    with tf.Graph().as_default():
        tfv1.add_to_collection("A", 1)
        backup = backup_collection()
        assert backup == {"A": [1]}
        tfv1.add_to_collection("A", 2)
        restore_collection(backup)
        assert tfv1.get_collection("A") == [1]
        with pytest.raises(TypeError, match="must be a list of collection names, got 'A'"):
            backup_collection("A")


def test_rms_psnr_and_print_stat_compute_their_formulas(capfd):
    a = np.array([[1.0, 2.0], [3.0, 5.0]], np.float32)
    b = np.array([[1.0, 1.0], [3.0, 3.0]], np.float32)
    graph = tf.Graph()
    with graph.as_default(), tfv1.name_scope("tower"):
        x = tf.constant(a, name="x")
        named, default = rms(x, name="my_rms"), rms(x)
        value = psnr(x, tf.constant(b), maxp=255.0)
        plain = psnr(x, tf.constant(b), name="plain")
        printed = print_stat(x, "stat of x")
    assert default.op.name == "tower/x/rms" and named.op.name == "tower/my_rms"
    with tfv1.Session(graph=graph) as sess:
        got = sess.run([named, default, value, plain, printed])
    mse = np.mean((a - b) ** 2)
    np.testing.assert_allclose(got[:2], [np.sqrt(np.mean(a ** 2))] * 2, rtol=1e-6)
    np.testing.assert_allclose(got[2], 20 * math.log10(255.0) - 10 * math.log10(mse), rtol=1e-5)
    np.testing.assert_allclose(got[3], -10 * math.log10(mse), rtol=1e-5)
    np.testing.assert_array_equal(got[4], a)
    assert "stat of x [2 2] 2.75" in capfd.readouterr().err


def test_dependencies_follow_inputs_and_control_inputs():
    with tf.Graph().as_default():
        v = tfv1.get_variable("v", [], initializer=tfv1.zeros_initializer())
        update = tfv1.assign_add(v, 1.0, name="update")
        with tf.control_dependencies([update]):
            after = tf.identity(tf.constant(2.0), name="after")
        unrelated = tf.constant(3.0, name="unrelated")
        assert dependency_of_targets([after], update)
        assert dependency_of_targets([after.op], update.op)
        assert not dependency_of_targets([unrelated], update)
        assert dependency_of_fetches({"a": [unrelated], "b": "after:0"}, update)
        assert not dependency_of_fetches([unrelated, None], update)
        with pytest.raises(TypeError, match="Expected a tf.Tensor or tf.Operation, got 'x'"):
            dependency_of_targets([after], "x")


def test_reuse_and_adapter_session_creators():
    graph = tf.Graph()
    with graph.as_default():
        v = tfv1.get_variable("v", [], initializer=tfv1.constant_initializer(4.0))
    sess = NewSessionCreator().create_session(graph)
    assert ReuseSessionCreator(sess).create_session(graph) is sess
    with pytest.raises(ValueError, match="built on another graph"):
        ReuseSessionCreator(sess).create_session(tf.Graph())
    wrapped = []
    adapted = SessionCreatorAdapter(NewSessionCreator(), lambda s: wrapped.append(s) or s)
    other = adapted.create_session(graph)
    assert wrapped == [other] and other.run(v) == 4.0
    sess.close()
    other.close()


def _free_port():
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def test_distributed_session_creator_initializes_on_the_chief():
    cluster = tf.train.ClusterSpec({"worker": [f"localhost:{_free_port()}"]})
    server = tf.distribute.Server(cluster, job_name="worker", task_index=0)
    graph = tf.Graph()
    with graph.as_default():
        v = tfv1.get_variable("v", [], initializer=tfv1.constant_initializer(7.0))
    creator = get_distributed_session_creator(server)
    assert creator.is_chief
    sess = creator.create_session(graph)
    assert sess.run(v) == 7.0
    sess.close()


def test_build_info_and_tf2():
    info = parse_TF_build_info()
    assert set(info) <= {"TF built with CUDA", "TF built with CUDNN", "TF compute capabilities"}
    assert set(info) == set() or "TF built with CUDA" in info
    assert is_tfv2() is True
