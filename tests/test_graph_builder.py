"""DataParallelBuilder, LeastLoadedDeviceSetter and allreduce_grads (tfloop.graph_builder)."""
import numpy as np
import pytest

from tfloop import get_current_tower_context
from tfloop.compat import tf, tfv1
from tfloop.graph_builder import DataParallelBuilder, LeastLoadedDeviceSetter, allreduce_grads


def test_towers_share_variables_and_get_their_context_and_device():
    seen = []

    def tower():
        ctx = get_current_tower_context()
        w = tfv1.get_variable("w", [2])
        out = tf.identity(w * 2.0, name="out")
        seen.append((ctx.name, ctx.is_main_training_tower, out.op.name, out.device))
        return out

    with tf.Graph().as_default():
        outs = DataParallelBuilder.call_for_each_tower([0, 1], tower,
                                                       devices=["/cpu:0", "/cpu:1"])
        assert [v.op.name for v in tfv1.global_variables()] == ["w"]
    assert len(outs) == 2
    assert seen == [("tower0", True, "tower0/out", "/device:CPU:0"),
                    ("tower1", False, "tower1/out", "/device:CPU:1")]
    with pytest.raises(ValueError, match="use_vs=True"):
        DataParallelBuilder.build_on_towers([0, 1], tower, use_vs=[True, True])


def test_least_loaded_device_setter_balances_variable_sizes():
    setter = LeastLoadedDeviceSetter("/cpu:0", ["/cpu:1", "/cpu:2"])
    with tf.Graph().as_default(), tfv1.device(setter):
        big = tfv1.get_variable("big", [100])
        small = tfv1.get_variable("small", [10])
        third = tfv1.get_variable("third", [5])
        compute = tf.identity(big)
    assert (big.device, small.device, third.device) == (
        "/device:CPU:1", "/device:CPU:2", "/device:CPU:2")
    assert setter.ps_sizes == [100, 15]
    assert compute.device == "/device:CPU:0"


@pytest.mark.parametrize("average", [True, False])
def test_allreduce_grads_with_tensorpacks_signature_reduces_on_each_towers_device(average):
    devices = ["/device:CPU:0", "/device:CPU:1"]
    graph = tf.Graph()
    with graph.as_default():
        grads = []
        for i, device in enumerate(devices):
            with tf.device(device):
                grads.append([tf.constant([1.0, 2.0]) * (i + 1), tf.constant(3.0 * (i + 1))])
        reduced = allreduce_grads(grads, average=average, mode="collective")
        single = allreduce_grads([grads[0]], average=average)
    config = tfv1.ConfigProto(device_count={"CPU": 2}, operation_timeout_in_ms=20000)
    with tfv1.Session(graph=graph, config=config) as sess:
        results = sess.run(reduced)
    scale = 0.5 if average else 1.0
    for tower in results:
        np.testing.assert_allclose(tower[0], np.array([3.0, 6.0]) * scale)
        np.testing.assert_allclose(tower[1], 9.0 * scale)
    assert [t.device for t in reduced[1]] == [devices[1]] * 2
    assert single == [grads[0]]
    with pytest.raises(ValueError, match="mode must be 'nccl' or 'collective', got 'add_n'"):
        allreduce_grads(grads, True, mode="add_n")
