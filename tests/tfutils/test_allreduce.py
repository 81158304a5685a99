"""All-reduce of tower gradients and the copies' broadcast, on logical CPU devices."""
import numpy as np
import pytest

from tfloop.compat import tf, tfv1
from tfloop.tfutils.allreduce import (
    CollectiveGroup,
    allreduce_grads,
    copy_from_first_tower,
    replica_difference,
)

DEVICES = ["/device:CPU:0", "/device:CPU:1", "/device:CPU:2"]


def _session(graph):
    # Every member of a collective must run in the same session.run, else it waits: the timeout
    # turns such a mistake into an error.
    return tfv1.Session(graph=graph, config=tfv1.ConfigProto(device_count={"CPU": 3},
                                                             operation_timeout_in_ms=20000))


@pytest.mark.parametrize("mode", ["add_n", "collective"])
@pytest.mark.parametrize("average", [True, False])
def test_every_tower_gets_the_sum_or_mean(mode, average):
    values = [[np.full([2, 2], i + 1.0, np.float32), np.arange(3, dtype=np.float64) * (i + 1)]
              for i in range(3)]
    graph = tf.Graph()
    with graph.as_default():
        grads = []
        for device, (a, b) in zip(DEVICES, values):
            with tf.device(device):
                grads.append([tf.constant(a), tf.constant(b)])
        reduced = allreduce_grads(grads, DEVICES, average=average, mode=mode)
    with _session(graph) as sess:
        results = sess.run(reduced)
    scale = 1.0 / 3 if average else 1.0
    for tower in results:
        np.testing.assert_allclose(tower[0], np.full([2, 2], 6.0 * scale), rtol=1e-6)
        np.testing.assert_allclose(tower[1], np.arange(3) * 6.0 * scale, rtol=1e-12)
        assert tower[1].dtype == np.float64
    assert [t.device for t in reduced[1]] == [DEVICES[1]] * 2


def test_sparse_gradients_are_made_dense():
    graph = tf.Graph()
    with graph.as_default():
        grads = []
        for i, device in enumerate(DEVICES[:2]):
            with tf.device(device):
                grads.append([tf.IndexedSlices(tf.constant([[1.0, 1.0]]), tf.constant([i]),
                                               tf.constant([2, 2]))])
        reduced = allreduce_grads(grads, DEVICES[:2], average=False, mode="collective")
    with _session(graph) as sess:
        for tower in sess.run(reduced):
            np.testing.assert_array_equal(tower[0], [[1.0, 1.0], [1.0, 1.0]])


def test_copies_take_the_first_towers_values():
    graph = tf.Graph()
    with graph.as_default():
        source = tfv1.get_variable("w", initializer=tf.constant([1.0, 2.0]))
        copies = [tfv1.get_variable(f"tower{i}/w", initializer=tf.constant([0.0, 5.0]))
                  for i in (1, 2)]
        difference = replica_difference([(source, copies)])
        broadcast = copy_from_first_tower([(source, copies)])
        init = tfv1.global_variables_initializer()
    with _session(graph) as sess:
        sess.run(init)
        assert sess.run(difference) == 3.0
        sess.run(broadcast)
        assert sess.run(difference) == 0.0
        np.testing.assert_array_equal(sess.run(copies[1]), [1.0, 2.0])


def test_bad_arguments():
    with tf.Graph().as_default():
        grads = [[tf.constant(1.0)], [tf.constant(2.0)]]
        with pytest.raises(ValueError, match="Unknown all-reduce mode 'ring'"):
            allreduce_grads(grads, DEVICES[:2], mode="ring")
        with pytest.raises(ValueError, match="Got gradients of 2 towers for 3 devices"):
            allreduce_grads(grads, DEVICES)
        with pytest.raises(ValueError, match="same number of gradients"):
            allreduce_grads([[tf.constant(1.0)], []], DEVICES[:2])
        with pytest.raises(ValueError, match="a group of 4 towers over several workers needs mode "
                                             "'collective'"):
            allreduce_grads(grads, DEVICES[:2], group=CollectiveGroup(4))
    with pytest.raises(ValueError, match="group_size must be a positive int, got 0"):
        CollectiveGroup(0)
