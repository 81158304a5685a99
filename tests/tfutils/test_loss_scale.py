"""LossScaleOptimizer: an inf gradient skips the step (weights unchanged, scale halved, skip
counted, global step advanced), good steps raise the scale, and the scale resumes exactly."""
import json
import os
import re

import numpy as np
import pytest
from support import LinearModel, dataset_fn, make_regression_data

import tfloop
from tfloop.compat import tf, tfv1
from tfloop.tfutils.gradproc import GlobalNormClip
from tfloop.tfutils.optimizer import (
    AccumGradOptimizer,
    PostProcessOptimizer,
    VariableAssignmentOptimizer,
    apply_grad_processors,
    optimizer_chain,
)
from tfloop.tfutils.precision import Precision
from tfloop.tfutils.skip_gate import SkipUpdateGate

X, Y = make_regression_data(24)
POISONED = X.copy()
POISONED[8:12] = np.inf            # the third batch of 4 has inf inputs, so inf gradients


class ScaledLinear(LinearModel):
    def __init__(self, growth_interval=2000, wrap=lambda opt: opt):
        super().__init__(0.05)
        self.growth_interval, self.wrap = growth_interval, wrap

    def optimizer(self):
        inner = self.wrap(tfv1.train.MomentumOptimizer(self.lr, 0.9))
        return tfloop.LossScaleOptimizer(inner, initial_scale=1024,
                                         growth_interval=self.growth_interval)


class PerStep(tfloop.Callback):
    """After every step: (global step, w, scale, good steps, skipped steps)."""
    _chief_only = False

    def _setup_graph(self):
        names = ["loss_scale/scale", "loss_scale/good_steps", "loss_scale/skipped_steps"]
        found = {v.op.name: v for v in tfv1.global_variables()}
        self.fetch = [tfv1.train.get_global_step(), found["w"]] + [found[n] for n in names]
        self.rows = []

    def _trigger_step(self):
        step, w, scale, good, skipped = self.trainer.sess.run(self.fetch)
        self.rows.append((int(step), w.ravel().copy(), float(scale), int(good), int(skipped)))


def train(x=POISONED, model=None, trainer=None, steps=6, callbacks=(), **kwargs):
    probe = PerStep()
    config = tfloop.TrainConfig(model=model or ScaledLinear(),
                                mixed_precision=kwargs.pop("mixed_precision", "float16"),
                                data=tfloop.DatasetInput(dataset_fn(x, Y, 4)),
                                callbacks=[probe, *callbacks], steps_per_epoch=steps,
                                max_epoch=kwargs.pop("max_epoch", 1), **kwargs)
    tfloop.launch_train_with_config(config, trainer or tfloop.SimpleTrainer())
    return probe.rows


def assert_third_step_skipped(rows):
    steps = [r[0] for r in rows]
    assert steps == list(range(1, len(rows) + 1))                  # a skip still counts
    np.testing.assert_array_equal(rows[2][1], rows[1][1])          # weights unchanged
    assert rows[1][2] == 1024 and rows[2][2] == 512                # scale halved
    assert [r[4] for r in rows[:4]] == [0, 0, 1, 1]                # the skip counted
    assert rows[2][3] == 0 and not np.array_equal(rows[3][1], rows[2][1])


def test_inf_gradient_skips_the_step_and_halves_the_scale():
    assert_third_step_skipped(train())


def test_good_steps_double_the_scale():
    rows = train(X, ScaledLinear(growth_interval=2))
    assert [r[2] for r in rows] == [1024, 2048, 2048, 4096, 4096, 8192]
    assert [r[3] for r in rows] == [1, 0, 1, 0, 1, 0]


def test_the_model_is_wrapped_once_by_train_config():
    class Plain(LinearModel):
        def optimizer(self):
            return tfv1.train.GradientDescentOptimizer(0.05)

    rows = train(model=Plain())
    # Real float16 may overflow at the default 2 ** 15 too: each skip halves it once.
    assert rows[0][2] * 2 ** rows[0][4] == 2.0 ** 15
    assert rows[2][4] == rows[1][4] + 1 and rows[2][2] == rows[1][2] / 2


def test_replicated_towers_skip_together():
    class Replicas(tfloop.Callback):
        def _trigger_step(self):
            self.difference = self.trainer.check_replicas()

    replicas = Replicas()
    rows = train(trainer=tfloop.SyncMultiGPUTrainerReplicated(2), steps=3,
                 callbacks=[replicas])
    # Tower 1 reads the poisoned batch at step 2 (batches 2 and 3 in one step).
    np.testing.assert_array_equal(rows[1][1], rows[0][1])
    assert [r[4] for r in rows] == [0, 1, 1] and rows[1][2] == 512
    assert replicas.difference == 0.0


@pytest.mark.parametrize("wrap", [
    lambda opt: AccumGradOptimizer(opt, 1),
    lambda opt: apply_grad_processors(opt, [GlobalNormClip(1.0)]),
], ids=["accum_grad", "grad_processors"])
def test_wrapped_optimizers_skip_too(wrap):
    assert_third_step_skipped(train(model=ScaledLinear(wrap=wrap)))


class Outside(LinearModel):
    """The loss-scale optimizer wrapped by another wrapper."""

    def __init__(self, wrap):
        super().__init__(0.05)
        self.wrap = wrap

    def optimizer(self):
        return self.wrap(tfloop.LossScaleOptimizer(tfv1.train.MomentumOptimizer(self.lr, 0.9),
                                                   initial_scale=1024))


@pytest.mark.parametrize("wrap", [
    SkipUpdateGate,
    lambda opt: apply_grad_processors(opt, [GlobalNormClip(1.0)]),
    lambda opt: AccumGradOptimizer(opt, 1),
    lambda opt: PostProcessOptimizer(opt, lambda v: None),
    lambda opt: VariableAssignmentOptimizer(opt, lambda v: None),
    lambda opt: SkipUpdateGate(apply_grad_processors(opt, [GlobalNormClip(1.0)])),
], ids=["skip_gate", "grad_processors", "accum_grad", "post_process", "assignment", "two"])
def test_a_wrapped_loss_scale_optimizer_is_not_scaled_again(wrap):
    class Names(tfloop.Callback):
        def _setup_graph(self):
            self.names = sorted(v.op.name for v in tfv1.global_variables()
                                if "loss_scale" in v.op.name)

    names = Names()
    assert_third_step_skipped(train(model=Outside(wrap), callbacks=[names]))
    assert names.names == ["loss_scale/good_steps", "loss_scale/scale",
                           "loss_scale/skipped_steps"]


def test_tensorflow_loss_scale_optimizer_is_not_scaled_again():
    with tf.Graph().as_default():
        opt = SkipUpdateGate(tfv1.mixed_precision.MixedPrecisionLossScaleOptimizer(
            tfv1.train.GradientDescentOptimizer(0.1), "dynamic"))
        assert Precision("float16").optimizer_fn(lambda: opt)() is opt
        plain = tfv1.train.GradientDescentOptimizer(0.1)
        wrapped = Precision("float16").optimizer_fn(lambda: plain)()
        assert isinstance(wrapped, tfloop.LossScaleOptimizer) and wrapped.inner is plain


def test_optimizer_chain_names_every_wrapped_optimizer():
    inner = tfv1.train.AdamOptimizer()
    accum = AccumGradOptimizer(inner, 2)
    outer = SkipUpdateGate(accum)
    assert outer.inner is accum and optimizer_chain(outer) == [outer, accum, inner]


def test_steps_per_run_loop_skips_inside_the_loop():
    rows = train(steps=6, steps_per_run=3)
    # Callbacks see the state after steps 3 and 6; step 3 was the poisoned one.
    assert [r[0] for r in rows] == [3, 6]
    assert rows[0][4] == 1 and rows[0][2] == 512


@pytest.mark.slow
def test_scale_is_saved_and_restored_exactly_on_resume(logdir):
    first = train(X, ScaledLinear(growth_interval=1), steps=3,
                  callbacks=[tfloop.ModelSaver()])
    assert first[-1][2] == 1024 * 8

    class ScaleAtStart(tfloop.Callback):
        def _setup_graph(self):
            self.var = [v for v in tfv1.global_variables() if v.op.name == "loss_scale/scale"][0]

        def _before_train(self):
            self.value = self.trainer.sess.run(self.var)

    start = ScaleAtStart()
    config = tfloop.AutoResumeTrainConfig(
        model=ScaledLinear(growth_interval=1), data=tfloop.DatasetInput(dataset_fn(X, Y, 4)),
        callbacks=[start, tfloop.ModelSaver()], steps_per_epoch=3, max_epoch=2,
        mixed_precision="float16")
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    assert config.resume_from is not None and start.value == 1024 * 8
    with open(os.path.join(logdir, "stats.json")) as f:
        stats = json.load(f)
    # The stat is the scale each epoch's last step used (it doubles after that step).
    assert [s["loss_scale"] for s in stats] == [1024 * 4, 1024 * 32]
    assert [s["skipped_steps"] for s in stats] == [0, 0]


@pytest.mark.slow
def test_the_scale_stops_growing_at_max_scale_and_training_goes_on():
    # In float32 no gradient overflows: from 1024, doubling every step passes 2 ** 126 (where
    # 1 / scale is subnormal) at step 117 and reaches inf at step 118 without a cap.
    rows = train(X, ScaledLinear(growth_interval=1), steps=124, mixed_precision=None)
    scales = [r[2] for r in rows]
    assert max(scales) == 2.0 ** 24 and scales[-1] == 2.0 ** 24
    assert [r[4] for r in rows][-1] == 0
    changes = [np.abs(b[1] - a[1]).max() for a, b in zip(rows[-8:], rows[-7:])]
    assert all(change > 0 for change in changes)


@pytest.mark.parametrize("kwargs, match", [
    ({"initial_scale": 0.5}, "initial_scale must be a finite number >= 1, got 0.5"),
    ({"initial_scale": float("inf")}, "initial_scale must be a finite number >= 1, got inf"),
    ({"initial_scale": float("nan")}, "initial_scale must be a finite number >= 1, got nan"),
    ({"min_scale": 0}, "min_scale must be a finite number >= 1, got 0"),
    ({"max_scale": float("inf")}, "max_scale must be a finite number >= 1, got inf"),
    ({"initial_scale": 4, "min_scale": 8},
     "min_scale <= initial_scale <= max_scale, got min_scale=8, initial_scale=4"),
    ({"initial_scale": 2 ** 30},
     "got min_scale=1.0, initial_scale=1073741824, max_scale=16777216.0"),
    ({"growth_interval": 0}, "growth_interval"),
])
def test_bad_arguments_are_refused(kwargs, match):
    opt = tfv1.train.GradientDescentOptimizer(0.1)
    with pytest.raises(ValueError, match=re.escape(match)):
        tfloop.LossScaleOptimizer(opt, **kwargs)


def test_loss_scale_alone_with_minimize():
    with tf.Graph().as_default():
        w = tfv1.get_variable("w", initializer=1.0)
        poison = tfv1.placeholder(tf.float32, [])
        opt = tfloop.LossScaleOptimizer(tfv1.train.GradientDescentOptimizer(0.5), 8)
        step = tfv1.train.get_or_create_global_step()
        train_op = opt.minimize(w * w * poison, global_step=step)
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            sess.run(train_op, {poison: 1.0})
            assert sess.run([w, opt.loss_scale]) == [0.0, 8.0]
            sess.run(train_op, {poison: np.inf})
            assert sess.run([w, opt.loss_scale, step]) == [0.0, 4.0, 2]


def test_a_huge_scale_still_divides_the_gradients_exactly():
    # 1 / 2 ** 127 is subnormal, which CPUs flush to zero: multiplying by it froze the weights.
    with tf.Graph().as_default():
        w = tfv1.get_variable("w", initializer=1.0)
        opt = tfloop.LossScaleOptimizer(tfv1.train.GradientDescentOptimizer(0.5), 2.0 ** 127,
                                        growth_interval=1, max_scale=2.0 ** 127)
        train_op = opt.minimize(0.1 * w * w, global_step=tfv1.train.get_or_create_global_step())
        with tfv1.Session() as sess:
            sess.run(tfv1.global_variables_initializer())
            for expected in (0.9, 0.81):
                sess.run(train_op)
                assert sess.run(w) == pytest.approx(expected, rel=1e-6)
            assert sess.run(opt.loss_scale) == 2.0 ** 127


def test_moving_averages_skip_the_steps_that_overflow():
    class Costs(tfloop.Callback):
        def _trigger_epoch(self):
            self.average = self.trainer.monitors.get_latest("cost")

    costs = Costs()
    rows = train(callbacks=[costs], steps=6)
    assert rows[2][4] >= 1                       # the poisoned step was skipped ...
    assert np.isfinite(costs.average)            # ... and left out of the average


def test_float32_averages_still_show_a_nan_cost():
    class Costs(tfloop.Callback):
        def _trigger_epoch(self):
            self.average = self.trainer.monitors.get_latest("cost")

    costs = Costs()
    config = tfloop.TrainConfig(model=ScaledLinear(), data=tfloop.DatasetInput(
        dataset_fn(POISONED, Y, 4)), callbacks=[costs], steps_per_epoch=4, max_epoch=1)
    tfloop.launch_train_with_config(config, tfloop.SimpleTrainer())
    assert np.isnan(costs.average)
