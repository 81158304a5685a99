"""Optimizer wrappers: values after each step recomputed with numpy, alone and in every trainer."""
import numpy as np
import pytest
from distributed_support import CaptureVariables
from support import make_regression_data

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils import gradproc
from tfloop.tfutils.optimizer import (
    AccumGradOptimizer,
    PostProcessOptimizer,
    ProxyOptimizer,
    VariableAssignmentOptimizer,
    apply_grad_processors,
)
from tfloop.train.async_multigpu import AsyncMultiGPUTrainer

W0 = np.array([1.0, -2.0, 3.0], np.float32)
G = np.array([3.0, 0.0, -4.0], np.float32)
LR = 0.5


def build(wrap):
    """w, a fed scale s and cost = s * sum(G * w): the gradient is s * G."""
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", initializer=W0)
        s = tfv1.placeholder(tf.float32, [], "s")
        step = tfv1.train.get_or_create_global_step()
        opt = wrap(tfv1.train.GradientDescentOptimizer(LR))
        train_op = opt.minimize(s * tf.reduce_sum(G * w), global_step=step)
        sess = tfv1.Session(graph=graph)
        sess.run(tfv1.global_variables_initializer())
    return sess, train_op, w, s, step, opt


def test_proxy_optimizer_delegates_and_exposes_the_wrapped_slots():
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", initializer=W0)
        opt = ProxyOptimizer(tfv1.train.MomentumOptimizer(LR, 0.9))
        train_op = opt.minimize(tf.reduce_sum(G * w))
        assert opt.get_slot_names() == ["momentum"]
        assert opt.get_slot(w, "momentum").op.name == "w/Momentum"
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run(train_op)
            sess.run(train_op)
            # momentum: v1 = g, v2 = 0.9 g + g
            np.testing.assert_allclose(sess.run(w), W0 - LR * G - LR * 1.9 * G, rtol=1e-6)


def test_post_process_optimizer_runs_the_op_after_the_update():
    sess, train_op, w, s, _, _ = build(lambda opt: PostProcessOptimizer(
        opt, lambda v: v.assign(tf.clip_by_value(v, -2.5, 2.5)).op))
    sess.run(train_op, {s: 1.0})
    np.testing.assert_allclose(sess.run(w), np.clip(W0 - LR * G, -2.5, 2.5), rtol=1e-6)


def test_post_process_optimizer_refuses_a_tensor_result():
    with pytest.raises(TypeError, match=r"func\(w\) must return a tf.Operation or None"):
        build(lambda opt: PostProcessOptimizer(opt, lambda v: v * 2))


def test_variable_assignment_optimizer_assigns_the_new_value():
    sess, train_op, w, s, step, _ = build(lambda opt: VariableAssignmentOptimizer(
        opt, lambda v: tf.clip_by_value(v, -1.0, 1.0)))
    sess.run(train_op, {s: 1.0})
    np.testing.assert_allclose(sess.run(w), np.clip(W0 - LR * G, -1, 1), rtol=1e-6)
    assert sess.run(step) == 1


def test_accum_grad_optimizer_applies_the_sum_every_niter_steps():
    sess, train_op, w, s, step, _ = build(lambda opt: AccumGradOptimizer(opt, 3))
    seen = []
    for scale in [1.0, 2.0, 3.0, 4.0]:
        sess.run(train_op, {s: scale})
        seen.append(sess.run(w))
    np.testing.assert_array_equal(seen[0], W0)
    np.testing.assert_array_equal(seen[1], W0)
    np.testing.assert_allclose(seen[2], W0 - LR * 6.0 * G, rtol=1e-6)
    np.testing.assert_allclose(seen[3], seen[2], rtol=1e-6)
    values = {v.op.name: sess.run(v) for v in sess.graph.get_collection("variables")}
    assert values["AccumGrad/counter"] == 4
    np.testing.assert_allclose(values["w/AccumGrad"], 4.0 * G)
    assert sess.run(step) == 4


def test_accum_grad_optimizer_with_momentum_steps_once_per_niter():
    graph = tf.Graph()
    with graph.as_default():
        w = tfv1.get_variable("w", initializer=W0)
        opt = AccumGradOptimizer(tfv1.train.MomentumOptimizer(LR, 0.9), 2)
        train_op = opt.minimize(tf.reduce_sum(G * w))
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            for _ in range(4):
                sess.run(train_op)
            # two momentum steps on 2G each: v1 = 2G, v2 = 0.9 * 2G + 2G
            np.testing.assert_allclose(sess.run(w), W0 - LR * 2 * G - LR * 3.8 * G, rtol=1e-6)


def test_apply_grad_processors_run_in_order():
    sess, train_op, w, s, _, _ = build(lambda opt: apply_grad_processors(opt, [
        gradproc.MapGradient(lambda g: g + 1.0), gradproc.ScaleGradient(("w", 0.5))]))
    sess.run(train_op, {s: 1.0})
    np.testing.assert_allclose(sess.run(w), W0 - LR * 0.5 * (G + 1.0), rtol=1e-6)


def test_processors_that_drop_every_gradient_are_refused():
    with pytest.raises(ValueError, match="left no gradient to apply"):
        build(lambda opt: apply_grad_processors(opt, [gradproc.ScaleGradient(("w", 0.0))]))


@pytest.mark.parametrize("make, message", [
    (lambda opt: apply_grad_processors(opt, gradproc.CheckGradient()), "takes a list"),
    (lambda opt: apply_grad_processors(opt, [lambda g: g]), "item 0 is a function"),
    (lambda opt: apply_grad_processors("sgd", []), "wraps a tf.compat.v1.train.Optimizer"),
    (lambda opt: ProxyOptimizer(object()), "wraps a tf.compat.v1.train.Optimizer"),
    (lambda opt: AccumGradOptimizer(opt, 0), "niter must be an int >= 1"),
    (lambda opt: PostProcessOptimizer(opt, 3), "func must be callable"),
])
def test_bad_arguments_are_refused_early(make, message):
    with pytest.raises((TypeError, ValueError), match=message):
        make(tfv1.train.GradientDescentOptimizer(LR))


# ---- in the trainers -------------------------------------------------------------------------
BATCH, STEPS = 8, 3


class TwoVariableModel(tfloop.ModelDesc):
    """Linear regression with a weight and a bias; the optimizer comes from ``make_opt``."""

    def __init__(self, make_opt):
        self.make_opt = make_opt

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tfv1.get_variable("fc/W", [3, 1], initializer=tfv1.constant_initializer(0.3))
        b = tfv1.get_variable("fc/b", [], initializer=tfv1.constant_initializer(-0.2))
        pred = tf.squeeze(tf.matmul(x, w), 1) + b
        return tf.reduce_mean(tf.square(pred - y), name="cost")

    def optimizer(self):
        return self.make_opt()


def train(trainer, make_opt, towers=1, steps=STEPS, steps_per_run=None):
    x, y = make_regression_data(BATCH * steps)
    y = y + 3.0

    def dataset():
        return tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH // towers)

    capture = CaptureVariables()
    config = tfloop.TrainConfig(model=TwoVariableModel(make_opt), data=tfloop.DatasetInput(dataset),
                                callbacks=[capture], extra_callbacks=[], monitors=[],
                                steps_per_epoch=steps, max_epoch=1, steps_per_run=steps_per_run)
    tfloop.launch_train_with_config(config, trainer)
    return capture.values


def clipped_scaled_sgd():
    return apply_grad_processors(tfv1.train.GradientDescentOptimizer(0.1), [
        gradproc.GlobalNormClip(0.5), gradproc.ScaleGradient(("fc/b", 0.5), verbose=False)])


def numpy_reference(steps=STEPS):
    """SGD with the gradients clipped to global norm 0.5, then the bias gradient halved."""
    x, y = make_regression_data(BATCH * steps)
    y = y + 3.0
    w, b = np.full([3], 0.3), -0.2
    for i in range(steps):
        xb, yb = x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]
        err = xb @ w + b - yb
        gw, gb = 2 * xb.T @ err / BATCH, 2 * err.mean()
        norm = np.sqrt(np.sum(gw ** 2) + gb ** 2)
        scale = min(1.0, 0.5 / norm)
        w, b = w - 0.1 * gw * scale, b - 0.1 * gb * scale * 0.5
    return w, b


@pytest.mark.parametrize("make_trainer, towers", [
    (lambda: tfloop.SimpleTrainer(), 1),
    (lambda: tfloop.SyncMultiGPUTrainerReplicated(2), 2),
    (lambda: tfloop.SyncMultiGPUTrainerParameterServer(2), 2),
])
def test_gradient_processors_in_every_synchronous_trainer_match_numpy(make_trainer, towers):
    values = train(make_trainer(), clipped_scaled_sgd, towers)
    w, b = numpy_reference()
    np.testing.assert_allclose(values["fc/W"][:, 0], w, rtol=1e-5)
    np.testing.assert_allclose(values["fc/b"], b, rtol=1e-5)
    # every tower copy got the same processed update (regexes match tower 1's copies too)
    for name in ("fc/W", "fc/b"):
        if "tower1/" + name in values:
            np.testing.assert_array_equal(values["tower1/" + name], values[name])


def test_gradient_processors_and_accumulation_inside_steps_per_run():
    values = train(tfloop.SimpleTrainer(), clipped_scaled_sgd, steps=4, steps_per_run=2)
    w, b = numpy_reference(4)
    np.testing.assert_allclose(values["fc/W"][:, 0], w, rtol=1e-5)
    np.testing.assert_allclose(values["fc/b"], b, rtol=1e-5)

    values = train(tfloop.SimpleTrainer(), lambda: AccumGradOptimizer(
        tfv1.train.GradientDescentOptimizer(0.1), 2), steps=4, steps_per_run=2)
    assert values["AccumGrad/counter"] == 4
    assert values["global_step"] == 4


def test_summary_gradient_in_the_replicated_trainer_summarizes_tower_zero_once():
    values = train(tfloop.SyncMultiGPUTrainerReplicated(2), lambda: apply_grad_processors(
        tfv1.train.GradientDescentOptimizer(0.1), [gradproc.SummaryGradient()]), towers=2)
    assert sorted(n for n in values if n.startswith("EMA/SummaryGradient")) == [
        "EMA/SummaryGradient/fc/W/rms/biased", "EMA/SummaryGradient/fc/W/rms/decay_power",
        "EMA/SummaryGradient/fc/b/rms/biased", "EMA/SummaryGradient/fc/b/rms/decay_power"]


class ConstantGradientModel(tfloop.ModelDesc):
    """cost = mean(x @ w): its gradient, mean(x), does not depend on w, so the racing updates of
    the async trainer give a deterministic result."""

    def inputs(self):
        return [tf.TensorSpec([None, 3], tf.float32, "x"), tf.TensorSpec([None], tf.float32, "y")]

    def build_graph(self, x, y):
        w = tfv1.get_variable("w", [3], initializer=tfv1.zeros_initializer())
        return tf.reduce_mean(tf.linalg.matvec(x, w), name="cost")

    def optimizer(self):
        return tfv1.train.GradientDescentOptimizer(0.1)


@pytest.mark.parametrize("scale_gradient", [True, False])
def test_async_trainer_applies_each_tower_gradient_on_its_own(scale_gradient):
    x, y = make_regression_data(BATCH * STEPS)
    capture = CaptureVariables()
    trainer = AsyncMultiGPUTrainer(2, scale_gradient=scale_gradient)
    config = tfloop.TrainConfig(
        model=ConstantGradientModel(),
        data=tfloop.DatasetInput(lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(4)),
        callbacks=[capture], extra_callbacks=[], monitors=[], steps_per_epoch=STEPS, max_epoch=1)
    tfloop.launch_train_with_config(config, trainer)
    per_tower = [x[i:i + 4].mean(axis=0) for i in range(0, len(x), 4)]
    expected = -0.1 * np.sum(per_tower, axis=0) * (0.5 if scale_gradient else 1.0)
    np.testing.assert_allclose(capture.values["w"], expected, rtol=1e-5)
    assert capture.values["global_step"] == STEPS
    train_inputs = sorted(op.name for op in trainer.train_op.control_inputs)
    assert train_inputs == ["async_apply_gradients/apply_grad_0",
                            "async_apply_gradients/apply_grad_1"]


@pytest.mark.parametrize("make_trainer, towers", [
    (lambda: tfloop.SimpleTrainer(), 1),
    (lambda: tfloop.SyncMultiGPUTrainerReplicated(2), 2),
    (lambda: tfloop.SyncMultiGPUTrainerParameterServer(2), 2),
])
def test_accumulation_in_every_synchronous_trainer_updates_every_second_step(make_trainer, towers):
    values = train(make_trainer(), lambda: AccumGradOptimizer(
        tfv1.train.GradientDescentOptimizer(0.1), 2), towers, steps=4)
    x, y = make_regression_data(BATCH * 4)
    y = y + 3.0
    w, b = np.full([3], 0.3), -0.2
    sum_w, sum_b = np.zeros(3), 0.0
    for i in range(4):
        xb, yb = x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH]
        err = xb @ w + b - yb
        sum_w, sum_b = sum_w + 2 * xb.T @ err / BATCH, sum_b + 2 * err.mean()
        if i % 2 == 1:
            w, b = w - 0.1 * sum_w, b - 0.1 * sum_b
            sum_w, sum_b = np.zeros(3), 0.0
    np.testing.assert_allclose(values["fc/W"][:, 0], w, rtol=1e-5)
    np.testing.assert_allclose(values["fc/b"], b, rtol=1e-5)
    assert values["AccumGrad/counter"] == 4 and values["global_step"] == 4


@pytest.mark.parametrize("make_trainer, towers", [
    (lambda: tfloop.SimpleTrainer(), 1),
    (lambda: tfloop.SyncMultiGPUTrainerReplicated(2), 2),
])
def test_variable_assignment_applies_to_every_copy(make_trainer, towers):
    values = train(make_trainer(), lambda: VariableAssignmentOptimizer(
        tfv1.train.GradientDescentOptimizer(0.5), lambda v: tf.clip_by_value(v, -0.25, 0.25)),
        towers)
    assert np.abs(values["fc/W"]).max() <= 0.25 and abs(values["fc/b"]) <= 0.25
    assert values["fc/b"] == pytest.approx(0.25)     # the bias grows past the clip every step
    for name in ("fc/W", "fc/b"):
        if "tower1/" + name in values:
            np.testing.assert_array_equal(values["tower1/" + name], values[name])
