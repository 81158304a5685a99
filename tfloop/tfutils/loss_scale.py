"""Dynamic loss scaling for float16 training, as plain graph logic around any optimizer.

float16 gradients of a float32-sized loss underflow to zero; multiplying the loss by a large
scale before differentiating keeps them representable, and dividing the gradients by it
afterwards restores their size. When the scale is too large a gradient overflows: that step is
skipped (no variable changes), the scale is halved, and a counter of skipped steps goes up.
After ``growth_interval`` good steps in a row the scale doubles, up to ``max_scale``. Unlike
TensorFlow's own loss-scale optimizer, a skipped step still advances the global step, so
checkpoint names and resume positions count session steps.
"""
import math
import weakref

from tfloop.compat import tf, tfv1
from tfloop.tfutils.gradproc import outer_graph
from tfloop.tfutils.optimizer import ProxyOptimizer
from tfloop.utils.checks import check_int

__all__ = ["LossScaleOptimizer"]


def _divided(values, scale):
    """``values / scale`` computed in float32: the scale may not fit a float16 gradient's dtype,
    and its inverse is subnormal (flushed to zero on CPUs) for scales above 2 ** 126."""
    return tf.cast(tf.cast(values, tf.float32) / scale, values.dtype)


def _unscaled(grad, scale):
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(_divided(grad.values, scale), grad.indices, grad.dense_shape)
    return _divided(grad, scale)


def _check_scale(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 1 \
            or math.isinf(value):
        raise ValueError(f"LossScaleOptimizer: {name} must be a finite number >= 1, got "
                         f"{value!r}.")
    return float(value)


def _all_finite(grads):
    checks = [tf.reduce_all(tf.math.is_finite(g.values if isinstance(g, tf.IndexedSlices) else g))
              for g in grads]
    return tf.reduce_all(tf.stack(checks), name="all_finite")


class _ScaleState:
    """The variables of one graph's loss scale (saved in checkpoints, restored on resume)."""

    def __init__(self, graph, initial_scale):
        with graph.name_scope(None), graph.name_scope("loss_scale/"), tf.device("/cpu:0"):
            self.scale = tfv1.Variable(float(initial_scale), name="scale", dtype=tf.float32,
                                       trainable=False, use_resource=True)
            self.good_steps = tfv1.Variable(0, name="good_steps", dtype=tf.int64,
                                            trainable=False, use_resource=True)
            self.skipped_steps = tfv1.Variable(0, name="skipped_steps", dtype=tf.int64,
                                               trainable=False, use_resource=True)
        with graph.name_scope(None):
            tfv1.summary.scalar("loss_scale", self.scale.read_value())
            tfv1.summary.scalar("skipped_steps", self.skipped_steps.read_value())


class LossScaleOptimizer(ProxyOptimizer):
    """Scale the loss before gradients, unscale them, and skip steps whose gradients overflow.

    ``TrainConfig(mixed_precision="float16")`` wraps the model's optimizer in one (with the
    defaults below) unless the model returns one already; use it directly to change them.

    The scale (``loss_scale/scale``), the run of good steps (``loss_scale/good_steps``) and the
    skipped steps (``loss_scale/skipped_steps``) are variables, so checkpoints hold them and a
    resumed run continues with the same scale. ``loss_scale`` (the scale the step used) and
    ``skipped_steps`` are recorded as stats. In a data-parallel trainer the overflow check covers
    every tower's gradients, so all towers skip together.

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer that applies the unscaled gradients.
        initial_scale (float): the first scale, a power of two.
        growth_interval (int): good steps in a row after which the scale doubles.
        min_scale (float): the scale is never halved below this.
        max_scale (float): the scale never doubles above this. The default, 2 ** 24, lifts
            gradients as small as 2 ** -48 into float16's range; a larger scale only makes
            overflows likelier.

    Example:
        >>> def optimizer(self):
        ...     return LossScaleOptimizer(tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
        ...                               initial_scale=2 ** 12, growth_interval=500)
    """

    def __init__(self, opt, initial_scale=2.0 ** 15, growth_interval=2000, min_scale=1.0,
                 max_scale=2.0 ** 24):
        super().__init__(opt, "LossScaleOptimizer")
        self.initial_scale = _check_scale("initial_scale", initial_scale)
        self.min_scale = _check_scale("min_scale", min_scale)
        self.max_scale = _check_scale("max_scale", max_scale)
        if not self.min_scale <= self.initial_scale <= self.max_scale:
            raise ValueError(f"LossScaleOptimizer: the scales must be ordered min_scale <= "
                             f"initial_scale <= max_scale, got min_scale={min_scale!r}, "
                             f"initial_scale={initial_scale!r}, max_scale={max_scale!r}.")
        self.growth_interval = check_int(growth_interval, "LossScaleOptimizer: growth_interval",
                                         at_least=1)
        self._states = weakref.WeakKeyDictionary()

    def state(self):
        """The loss-scale variables of the current graph, created on first use."""
        graph = outer_graph()
        if graph not in self._states:
            with tf.init_scope():
                self._states[graph] = _ScaleState(graph, self.initial_scale)
        return self._states[graph]

    @property
    def loss_scale(self):
        """tf.Variable: the current scale (float32)."""
        return self.state().scale

    def compute_gradients(self, loss, var_list=None, **kwargs):
        """The gradients of ``loss * scale``, divided by the scale (float32 scale arithmetic)."""
        scale = self.loss_scale.read_value()
        scaled_loss = tf.cast(loss, tf.float32) * scale
        pairs = self._opt.compute_gradients(tf.cast(scaled_loss, loss.dtype), var_list=var_list,
                                            **kwargs)
        return [(_unscaled(g, scale), v) for g, v in pairs]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Apply the gradients when all are finite, update the scale, advance ``global_step``."""
        pairs = [(g, v) for g, v in grads_and_vars if g is not None]
        if not pairs:
            raise ValueError("LossScaleOptimizer: no variable has a gradient to apply.")
        state = self.state()
        with tf.name_scope("LossScaleOptimizer"):
            finite = _all_finite([g for g, _ in pairs])

            def apply():
                with tf.control_dependencies([self._opt.apply_gradients(pairs)]):
                    return tf.constant(True)

            applied = tf.cond(finite, apply, lambda: tf.constant(False))
            with tf.control_dependencies([applied]):
                updates = self._update_scale(state, finite)
            if global_step is not None:
                with tf.control_dependencies(updates):
                    updates.append(tfv1.assign_add(global_step, 1).op)
            return tf.group(*updates, name=name or "loss_scaled_update")

    def _update_scale(self, state, finite):
        good = tf.where(finite, state.good_steps.read_value() + 1, tf.constant(0, tf.int64))
        grow = tf.logical_and(finite, good >= self.growth_interval)
        scale = state.scale.read_value()
        new_scale = tf.where(grow, scale * 2.0,
                             tf.where(finite, scale, tf.maximum(scale * 0.5, self.min_scale)))
        # The cap also brings back a scale restored from a checkpoint made without it.
        new_scale = tf.minimum(new_scale, self.max_scale)
        return [state.scale.assign(new_scale).op,
                state.good_steps.assign(tf.where(grow, tf.zeros_like(good), good)).op,
                state.skipped_steps.assign_add(tf.cast(tf.logical_not(finite), tf.int64)).op]
