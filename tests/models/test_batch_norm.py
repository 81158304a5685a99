"""BatchNorm and BatchRenorm: tensorpack's variable names, numerics against numpy, and which towers
update the moving averages (and how: UPDATE_OPS, internal, skip)."""
import numpy as np
import pytest

import tfloop
from tfloop import BatchNorm, BatchRenorm, TowerContext
from tfloop.compat import tf, tfv1

RNG = np.random.RandomState(0)
EPS = 1e-5


def np_bn(x, mean, var, beta=0.0, gamma=1.0):
    return (x - mean) / np.sqrt(var + EPS) * gamma + beta


def variables_by_name():
    return {v.op.name: v for v in tfv1.global_variables()}


def test_training_tower_normalizes_with_batch_statistics_and_updates_the_ema():
    x = RNG.rand(6, 3, 3, 4).astype(np.float32) * 3 + 1
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=True):
            y = BatchNorm("bn", inp, momentum=0.8)
        assert sorted(variables_by_name()) == ["bn/beta", "bn/gamma", "bn/mean/EMA",
                                               "bn/variance/EMA"]
        assert y.name == "bn/output:0"
        assert y.variables.moving_mean is y.variables.mean is variables_by_name()["bn/mean/EMA"]
        updates = tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)
        assert len(updates) == 2
        assert set(tfv1.get_collection(tfv1.GraphKeys.MODEL_VARIABLES)) == {
            y.variables.moving_mean, y.variables.moving_variance}
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(y, {inp: x})
            sess.run(updates, {inp: x})
            mean, var = sess.run([y.variables.mean, y.variables.variance])
    axes = (0, 1, 2)
    np.testing.assert_allclose(out, np_bn(x, x.mean(axes), x.var(axes)), atol=1e-4)
    np.testing.assert_allclose(mean, 0.2 * x.mean(axes), rtol=1e-5)
    np.testing.assert_allclose(var, 0.8 + 0.2 * x.var(axes), rtol=1e-5)


def test_inference_tower_uses_the_ema_and_shares_the_variables():
    x = RNG.rand(4, 5).astype(np.float32)
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=True):
            BatchNorm("bn", inp)
        with TowerContext("infer", is_training=False):
            y = BatchNorm("bn", inp)
        assert len(tfv1.global_variables()) == 4
        assert len(tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)) == 2
        v = variables_by_name()
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run([v["bn/mean/EMA"].assign([1.0] * 5), v["bn/variance/EMA"].assign([4.0] * 5),
                      v["bn/gamma"].assign([2.0] * 5), v["bn/beta"].assign([0.5] * 5)])
            out = sess.run(y, {inp: x})
    np.testing.assert_allclose(out, np_bn(x, 1.0, 4.0, 0.5, 2.0), atol=1e-5)


def test_only_the_first_training_tower_updates():
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, [None, 3])
        for i in range(2):
            with TowerContext(f"tower{i}", is_training=True, index=i):
                BatchNorm("bn", inp)
        updates = tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)
        assert [op.name for op in updates] == ["tower0/bn/mean_ema_op/AssignSubVariableOp",
                                               "tower0/bn/var_ema_op/AssignSubVariableOp"]


@pytest.mark.parametrize("mode", ["internal", "skip", "collection"])
def test_ema_update_modes(mode):
    x = np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=True):
            y = BatchNorm("bn", inp, ema_update=mode, decay=0.5)   # decay: old name of momentum
        assert len(tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)) == \
            (2 if mode == "collection" else 0)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run(y, {inp: x})
            mean = sess.run(y.variables.moving_mean)
    expected = {"internal": [1.0, 2.0], "skip": [0.0, 0.0], "collection": [0.0, 0.0]}[mode]
    np.testing.assert_allclose(mean, expected)


def test_training_argument_overrides_the_tower_and_warns_in_training(log_warnings):
    x = RNG.rand(3, 2).astype(np.float32)

    def run(tower, **kwargs):
        with tf.Graph().as_default():
            inp = tfv1.placeholder(tf.float32, x.shape)
            with tower:
                y = BatchNorm("bn", inp, **kwargs)
            with tfv1.Session() as sess:
                sess.run(tfv1.global_variables_initializer())
                return sess.run(y, {inp: x}), len(tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS))

    frozen, updates = run(TowerContext("", is_training=True), use_local_stat=False)
    np.testing.assert_allclose(frozen, np_bn(x, 0.0, 1.0), atol=1e-5)
    assert updates == 0
    assert any("'bn' uses its moving mean/variance in training" in w for w in log_warnings)
    # A tower that is not training but asked for batch statistics updates the EMA (tensorpack).
    local, updates = run(TowerContext("pred", is_training=False), training=True)
    np.testing.assert_allclose(local, np_bn(x, x.mean(0), x.var(0)), atol=1e-4)
    assert updates == 2


def test_nchw_and_no_affine():
    x = RNG.rand(4, 3, 2, 2).astype(np.float32)
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=True):
            y = BatchNorm("bn", inp, data_format="channels_first", center=False, use_scale=False)
        assert sorted(variables_by_name()) == ["bn/mean/EMA", "bn/variance/EMA"]
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(y, {inp: x})
    axes = (0, 2, 3)
    np.testing.assert_allclose(out, np_bn(x, x.mean(axes, keepdims=True),
                                          x.var(axes, keepdims=True)), atol=1e-4)


def test_virtual_batch_size_normalizes_each_ghost_batch():
    x = RNG.rand(4, 2, 2, 3).astype(np.float32)
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, [None, 2, 2, 3])
        with TowerContext("", is_training=True):
            y = BatchNorm("bn", inp, virtual_batch_size=2, momentum=0.0)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(y, {inp: x})
            mean = sess.run(y.variables.moving_mean)
    axes = (0, 1, 2)
    expected = np.concatenate([np_bn(g, g.mean(axes), g.var(axes)) for g in (x[:2], x[2:])])
    np.testing.assert_allclose(out, expected, atol=1e-4)
    np.testing.assert_allclose(mean, x[:2].mean(axes), rtol=1e-5)   # from the first ghost batch


def test_sync_statistics_single_tower_warns(log_warnings):
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, [None, 3])
        with TowerContext("", is_training=True):
            BatchNorm("bn", inp, sync_statistics="nccl")
        assert any("only one tower" in w for w in log_warnings)


TWO_CPUS = tfv1.ConfigProto(device_count={"CPU": 2})


def two_synced_towers(x, sync_statistics="nccl", devices=("/cpu:0", "/cpu:1")):
    """BatchNorm in two training towers (total=2), each on half of ``x``; with a loss of both."""
    inp = tfv1.placeholder(tf.float32, x.shape)
    outs = []
    for i, device in enumerate(devices):
        with TowerContext(f"tower{i}", is_training=True, index=i, total=2), tf.device(device):
            half = inp[i * len(x) // 2:(i + 1) * len(x) // 2]
            outs.append(BatchNorm("bn", half, momentum=0.8, sync_statistics=sync_statistics))
    return inp, outs


def test_sync_statistics_averages_the_towers_like_one_tower_on_the_combined_batch():
    x = RNG.rand(8, 2, 2, 3).astype(np.float32) * 3 + 1
    weights = np.arange(1.0, 4.0, dtype=np.float32)   # a loss that is not flat
    with tf.Graph().as_default():
        inp, outs = two_synced_towers(x)
        grad = tf.gradients(tf.add_n([tf.reduce_sum(tf.square(o * weights)) for o in outs]),
                            inp)[0]
        ema = [variables_by_name()[n] for n in ("bn/mean/EMA", "bn/variance/EMA")]
        assert not tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)     # updated internally
        with tfv1.Session(config=TWO_CPUS) as sess:
            sess.run(tfv1.global_variables_initializer())
            out, synced_grad = sess.run([tf.concat(outs, 0), grad], {inp: x})
            synced_ema = sess.run(ema)
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=True):
            y = BatchNorm("bn", inp, momentum=0.8, ema_update="internal")
        grad = tf.gradients(tf.reduce_sum(tf.square(y * weights)), inp)[0]
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            ref_out, ref_grad = sess.run([y, grad], {inp: x})
            ref_ema = sess.run([variables_by_name()[n] for n in ("bn/mean/EMA",
                                                                 "bn/variance/EMA")])
    axes = (0, 1, 2)
    np.testing.assert_allclose(out, np_bn(x, x.mean(axes), x.var(axes)), atol=1e-4)
    np.testing.assert_allclose(out, ref_out, atol=1e-5)
    np.testing.assert_allclose(synced_grad, ref_grad, atol=1e-4)
    for synced, ref in zip(synced_ema, ref_ema):
        np.testing.assert_allclose(synced, ref, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(synced_ema[0], 0.2 * x.mean(axes), rtol=1e-5)


def test_sync_statistics_refusals():
    x = np.zeros([4, 3], np.float32)
    with tf.Graph().as_default(), pytest.raises(ValueError, match="tfloop does not synchron"):
        two_synced_towers(x, "horovod")
    with tf.Graph().as_default(), pytest.raises(ValueError, match="both on '/device:CPU:0'"):
        two_synced_towers(x, devices=("/cpu:0", "/cpu:0"))
    with tf.Graph().as_default(), TowerContext("tower0", is_training=True, total=2), \
            pytest.raises(ValueError, match="built without a device"):
        BatchNorm("bn", tfv1.placeholder(tf.float32, [None, 3]), sync_statistics="nccl")
    with tf.Graph().as_default(), TowerContext("tower1", is_training=True, index=1), \
            pytest.raises(ValueError, match="says total=1.*TowerContext.*total="):
        BatchNorm("bn", tfv1.placeholder(tf.float32, [None, 3]), sync_statistics="nccl")


def test_batchnorm_errors():
    with tf.Graph().as_default(), TowerContext("", is_training=True):
        with pytest.raises(ValueError, match="needs a 2D or 4D input"):
            BatchNorm("a", tfv1.placeholder(tf.float32, [None, 2, 3]))
        x = tfv1.placeholder(tf.float32, [None, 3])
        with pytest.raises(ValueError, match="ema_update must be one of"):
            BatchNorm("b", x, ema_update="sometimes")
        with pytest.raises(ValueError, match="sync_statistics must be None, 'nccl' or"):
            BatchNorm("c", x, sync_statistics="mpi")
        with pytest.raises(ValueError, match="axis must be 1 for a 2D input"):
            BatchNorm("d", x, axis=3)


def test_batch_renorm_corrects_with_the_renorm_averages():
    x = RNG.rand(8, 3).astype(np.float32) * 2 + 1
    with tf.Graph().as_default():
        inp = tfv1.placeholder(tf.float32, x.shape)
        with TowerContext("", is_training=True):
            y = BatchRenorm("brn", inp, 1.5, 0.5)
        with TowerContext("infer", is_training=False):
            z = BatchRenorm("brn", inp, 1.5, 0.5)
        assert sorted(variables_by_name()) == [
            "brn/beta", "brn/gamma", "brn/moving_mean", "brn/moving_stddev", "brn/moving_variance",
            "brn/renorm_mean", "brn/renorm_stddev"]
        v = variables_by_name()
        updates = tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            out = sess.run(y, {inp: x})
            renorm_mean = sess.run(v["brn/renorm_mean"])
            sess.run(updates, {inp: x})
            inferred, moving_var = sess.run([z, v["brn/moving_variance"]], {inp: x})
    mean, std = x.mean(0), np.sqrt(x.var(0) + EPS)
    r, d = np.clip(std / 1.0, 1 / 1.5, 1.5), np.clip(mean / 1.0, -0.5, 0.5)
    np.testing.assert_allclose(out, (x - mean) / std * r + d, atol=1e-4)
    np.testing.assert_allclose(renorm_mean, 0.01 * mean, rtol=1e-5)
    moving_std = 0.9 + 0.1 * np.sqrt(x.var(0) + EPS)
    np.testing.assert_allclose(moving_var, moving_std ** 2 - EPS, rtol=1e-5)
    np.testing.assert_allclose(inferred, np_bn(x, 0.1 * mean, moving_var), atol=1e-4)


@pytest.mark.slow
def test_batchnorm_trains_in_a_data_parallel_trainer():
    """Two replicated towers on two CPU devices: tower 0's EMA moves, and only its updates run."""
    rng = np.random.RandomState(1)
    data = [(rng.rand(4, 3).astype(np.float32) + 2.0,) for _ in range(3)]

    class Model(tfloop.ModelDesc):
        def inputs(self):
            return [tf.TensorSpec([None, 3], tf.float32, "x")]

        def build_graph(self, x):
            y = BatchNorm("bn", tfloop.FullyConnected("fc", x, 3))
            return tf.reduce_mean(tf.square(y), name="cost")

        def optimizer(self):
            return tfv1.train.GradientDescentOptimizer(0.01)

    means = []

    class ReadMean(tfloop.Callback):
        def _after_train(self):
            var = next(v for v in tfv1.global_variables() if v.op.name == "bn/mean/EMA")
            means.append(self.trainer.sess.run(var))
            names = [op.name for op in tfv1.get_collection(tfv1.GraphKeys.UPDATE_OPS)]
            means.append(names)

    config = tfloop.TrainConfig(model=Model(), data=data, callbacks=[ReadMean()], monitors=[],
                                max_epoch=1, steps_per_epoch=1)
    tfloop.launch_train_with_config(config, tfloop.SyncMultiGPUTrainerReplicated(2))
    assert np.abs(means[0]).max() > 0.01
    assert all(name.startswith("tower0/") for name in means[1]) and len(means[1]) == 2


def train_synced_bn(trainer, towers, steps=3, batch=8):
    """FC -> BatchNorm(sync_statistics) -> FC trained ``steps`` steps of ``batch`` datapoints in
    all (``batch // towers`` per tower); the global variables' values after training."""
    rng = np.random.RandomState(2)
    x = rng.randn(steps * batch, 4).astype(np.float32) * 2 + 1
    y = np.sin(x.sum(axis=1)).astype(np.float32)
    w1, w2 = rng.randn(4, 3).astype(np.float32), rng.randn(3, 1).astype(np.float32)
    values = {}

    class Model(tfloop.ModelDesc):
        def inputs(self):
            return [tf.TensorSpec([None, 4], tf.float32, "x"),
                    tf.TensorSpec([None], tf.float32, "y")]

        def build_graph(self, x, y):
            h = tf.matmul(x, tfv1.get_variable("fc1/W", initializer=w1))
            h = tf.tanh(BatchNorm("bn", h, sync_statistics="nccl" if towers > 1 else None))
            pred = tf.squeeze(tf.matmul(h, tfv1.get_variable("fc2/W", initializer=w2)), 1)
            return tf.reduce_mean(tf.square(pred - y), name="cost")

        def optimizer(self):
            return tfv1.train.GradientDescentOptimizer(0.3)

    class Capture(tfloop.Callback):
        def _after_train(self):
            variables = tfv1.global_variables()
            values.update(zip([v.op.name for v in variables], self.trainer.sess.run(variables)))

    def dataset():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch // towers)

    config = tfloop.TrainConfig(model=Model(), data=tfloop.DatasetInput(dataset),
                                callbacks=[Capture()], monitors=[], max_epoch=1,
                                steps_per_epoch=steps)
    tfloop.launch_train_with_config(config, trainer)
    return values


@pytest.mark.parametrize("make_trainer", [
    pytest.param(lambda: tfloop.SyncMultiGPUTrainerReplicated(2, mode="add_n"), id="add_n"),
    pytest.param(lambda: tfloop.SyncMultiGPUTrainerReplicated(2, mode="collective"),
                 id="collective", marks=pytest.mark.slow),
    pytest.param(lambda: tfloop.SyncMultiGPUTrainerParameterServer(2), id="ps",
                 marks=pytest.mark.slow)])
def test_two_towers_with_sync_statistics_train_like_one_tower_on_the_combined_batch(make_trainer):
    reference = train_synced_bn(tfloop.SimpleTrainer(), towers=1)
    synced = train_synced_bn(make_trainer(), towers=2)
    assert np.abs(reference["bn/mean/EMA"]).max() > 0.01 and np.abs(reference["bn/beta"]).max() > 0
    for name in ("fc1/W", "fc2/W", "bn/beta", "bn/gamma", "bn/mean/EMA", "bn/variance/EMA"):
        np.testing.assert_allclose(synced[name], reference[name], rtol=1e-4, atol=1e-5,
                                   err_msg=name)
