"""Dynamic loss scaling for float16 training, as plain graph logic around any optimizer.

float16 gradients of a float32-sized loss underflow to zero; multiplying the loss by a large
scale before differentiating keeps them representable, and dividing the gradients by it
afterwards restores their size. When the scale is too large a gradient overflows: that step is
skipped (no variable changes), the scale is halved, and a counter of skipped steps goes up.
After ``growth_interval`` good steps in a row the scale doubles. Unlike TensorFlow's own
loss-scale optimizer, a skipped step still advances the global step, so checkpoint names and
resume positions count session steps.
"""
import weakref

from tfloop.compat import tf, tfv1
from tfloop.tfutils.gradproc import outer_graph
from tfloop.tfutils.optimizer import ProxyOptimizer
from tfloop.utils.checks import check_int

__all__ = ["LossScaleOptimizer"]


def _scaled(grad, factor):
    if grad is None:
        return None
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(grad.values * tf.cast(factor, grad.values.dtype), grad.indices,
                                grad.dense_shape)
    return grad * tf.cast(factor, grad.dtype)


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

    Example:
        >>> def optimizer(self):
        ...     return LossScaleOptimizer(tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
        ...                               initial_scale=2 ** 12, growth_interval=500)
    """

    def __init__(self, opt, initial_scale=2.0 ** 15, growth_interval=2000, min_scale=1.0):
        super().__init__(opt, "LossScaleOptimizer")
        for name, value in (("initial_scale", initial_scale), ("min_scale", min_scale)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 1:
                raise ValueError(f"LossScaleOptimizer: {name} must be a number >= 1, got "
                                 f"{value!r}.")
        self.initial_scale = float(initial_scale)
        self.growth_interval = check_int(growth_interval, "LossScaleOptimizer: growth_interval",
                                         at_least=1)
        self.min_scale = float(min_scale)
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
        inverse = 1.0 / scale
        return [(_scaled(g, inverse), v) for g, v in pairs]

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
        return [state.scale.assign(new_scale).op,
                state.good_steps.assign(tf.where(grow, tf.zeros_like(good), good)).op,
                state.skipped_steps.assign_add(tf.cast(tf.logical_not(finite), tf.int64)).op]
