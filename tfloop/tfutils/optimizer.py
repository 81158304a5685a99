"""Optimizer wrappers: gradient processors, post-update ops and gradient accumulation.

Each wrapper is a ``tf.compat.v1.train.Optimizer`` that delegates to the one it wraps, so it can be
returned from ``ModelDesc.optimizer()`` and used by every trainer, or alone with ``minimize``.
"""
import contextlib
import weakref

from tfloop.compat import tf, tfv1
from tfloop.tfutils.gradproc import FilterNoneGrad, GradientProcessor, outer_graph, split_by_replica
from tfloop.utils.checks import check_callable, check_int
from tfloop.utils.coerce import tensorpack_int

__all__ = ["apply_grad_processors", "ProxyOptimizer", "PostProcessOptimizer",
           "VariableAssignmentOptimizer", "AccumGradOptimizer", "optimizer_chain"]


def _check_optimizer(opt, who):
    if not isinstance(opt, tfv1.train.Optimizer):
        raise TypeError(f"{who} wraps a tf.compat.v1.train.Optimizer (e.g. "
                        f"tf.compat.v1.train.AdamOptimizer(1e-3)), got {opt!r}.")
    return opt


class ProxyOptimizer(tfv1.train.Optimizer):
    """An optimizer that hands every call to the optimizer it wraps; subclass it to change one
    step (usually ``apply_gradients``).

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer to wrap.
        name (str): this optimizer's name.

    Example:
        >>> class Logged(ProxyOptimizer):
        ...     def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        ...         grads_and_vars = list(grads_and_vars)
        ...         logger.info(f"{len(grads_and_vars)} gradients")
        ...         return super().apply_gradients(grads_and_vars, global_step, name)
    """

    def __init__(self, opt, name="ProxyOptimizer"):
        self._opt = _check_optimizer(opt, type(self).__name__)
        super().__init__(False, name)

    @property
    def inner(self):
        """tf.compat.v1.train.Optimizer: the optimizer this one wraps."""
        return self._opt

    def compute_gradients(self, *args, **kwargs):
        return self._opt.compute_gradients(*args, **kwargs)

    def get_slot(self, *args, **kwargs):
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args, **kwargs):
        return self._opt.get_slot_names(*args, **kwargs)

    def apply_gradients(self, *args, **kwargs):
        return self._opt.apply_gradients(*args, **kwargs)

    def variables(self):
        return self._opt.variables() + super().variables()


def optimizer_chain(opt):
    """``opt`` and every optimizer it wraps, outermost first (each wrapper is a
    :class:`ProxyOptimizer`, which names the one it wraps ``inner``).

    Example:
        >>> opt = SkipUpdateGate(AccumGradOptimizer(tf.compat.v1.train.AdamOptimizer(), 2))
        >>> [type(o).__name__ for o in optimizer_chain(opt)]
        ['SkipUpdateGate', 'AccumGradOptimizer', 'AdamOptimizer']
    """
    chain = [opt]
    while isinstance(chain[-1], ProxyOptimizer):
        chain.append(chain[-1].inner)
    return chain


class _ApplyGradientProcessor(ProxyOptimizer):
    """The optimizer made by :func:`apply_grad_processors`."""

    def __init__(self, opt, gradprocs):
        super().__init__(opt)
        self._gradprocs = list(gradprocs)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        processed = []
        for device, group in split_by_replica(list(grads_and_vars)):
            with tfv1.device(device) if device else contextlib.nullcontext():
                for proc in self._gradprocs:
                    group = proc.process(group)
            processed.extend(group)
        if not processed:
            names = ", ".join(type(p).__name__ for p in self._gradprocs)
            raise ValueError(f"The gradient processors ({names}) left no gradient to apply: "
                             f"every variable would stay unchanged.")
        return self._opt.apply_gradients(processed, global_step, name)


def apply_grad_processors(opt, gradprocs):
    """Wrap ``opt`` so that ``gradprocs`` run, in order, on the gradients before every update.

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer.
        gradprocs (list[GradientProcessor]): the processors.

    Returns:
        tf.compat.v1.train.Optimizer: the wrapped optimizer.

    Example:
        >>> opt = apply_grad_processors(tf.compat.v1.train.AdamOptimizer(1e-3),
        ...                             [gradproc.GlobalNormClip(5), gradproc.SummaryGradient()])
    """
    _check_optimizer(opt, "apply_grad_processors")
    if not isinstance(gradprocs, (list, tuple)):
        raise TypeError(f"apply_grad_processors takes a list of GradientProcessor, got "
                        f"{gradprocs!r}.")
    for i, proc in enumerate(gradprocs):
        if not isinstance(proc, GradientProcessor):
            kind = "a function" if callable(proc) else f"{proc!r} ({type(proc).__name__})"
            raise TypeError(f"apply_grad_processors takes GradientProcessor objects (e.g. "
                            f"gradproc.GlobalNormClip(5)); item {i} is {kind}. Wrap a function "
                            f"of the gradient in gradproc.MapGradient(func).")
    return _ApplyGradientProcessor(opt, gradprocs)


class PostProcessOptimizer(ProxyOptimizer):
    """Run an op per variable after each update (clipping, quantization, ...).

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer.
        func: ``func(variable)`` returns a ``tf.Operation`` to run after the update, or None.
        colocate (bool): accepted for tensorpack compatibility; TensorFlow places the op by its
            inputs anyway.

    Example:
        >>> opt = PostProcessOptimizer(opt, lambda v: v.assign(tf.clip_by_norm(v, 1.0)).op)
    """

    def __init__(self, opt, func, colocate=True):
        super().__init__(opt)
        check_callable(func, f"{type(self).__name__}: func")
        self._func = func
        self._colocate = bool(colocate)

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        update = super().apply_gradients(grads_and_vars, global_step)
        ops = []
        with tf.control_dependencies([update]):
            for _, var in grads_and_vars:
                op = self._func(var)
                if op is None:
                    continue
                if not isinstance(op, tf.Operation):
                    raise TypeError(f"{type(self).__name__}: func({var.op.name}) must return a "
                                    f"tf.Operation or None, got {op!r}.")
                ops.append(op)
        return tf.group(update, *ops, name=name)


class VariableAssignmentOptimizer(PostProcessOptimizer):
    """Assign each variable a new value computed from it after each update.

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer.
        func: ``func(variable)`` returns the variable's new value (a tensor), or None to leave it.

    Example:
        >>> # WGAN's weight clipping
        >>> opt = VariableAssignmentOptimizer(opt, lambda v: tf.clip_by_value(v, -0.01, 0.01))
    """

    def __init__(self, opt, func):
        check_callable(func, "VariableAssignmentOptimizer: func")

        def assign(var):
            value = func(var)
            return None if value is None else tfv1.assign(var, value, use_locking=False).op
        super().__init__(opt, assign)


class AccumGradOptimizer(ProxyOptimizer):
    """Sum the gradients of ``niter`` consecutive steps and apply the sum every ``niter``-th step
    (about a ``niter`` times larger batch and learning rate, with the memory of one batch).

    Every call increments ``global_step`` when given. The running sums (slots ``AccumGrad``) and
    the step counter (``AccumGrad/counter``) are variables, saved with checkpoints.

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer that applies the sums.
        niter (int): steps per update, >= 1.

    Example:
        >>> opt = AccumGradOptimizer(tf.compat.v1.train.MomentumOptimizer(0.1, 0.9), niter=4)
        >>> train_op = opt.minimize(cost)
    """

    def __init__(self, opt, niter):
        niter = check_int(tensorpack_int(niter, "AccumGradOptimizer: niter"),
                          "AccumGradOptimizer: niter", at_least=1)
        super().__init__(opt, "AccumGrad")
        self._niter = niter
        self._counters = weakref.WeakKeyDictionary()

    def _counter(self):
        graph = outer_graph()
        if graph not in self._counters:
            with tf.init_scope(), tfv1.variable_scope(self._name), tf.device("/cpu:0"):
                self._counters[graph] = tfv1.Variable(0, name="counter", trainable=False,
                                                      dtype=tf.int32)
        return self._counters[graph]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = FilterNoneGrad().process(list(grads_and_vars))
        if not grads_and_vars:
            raise ValueError("AccumGradOptimizer: no variable has a gradient to accumulate.")
        with tf.control_dependencies(None):
            slots = [self._zeros_slot(v, "accum", self._name) for _, v in grads_and_vars]
        counter = self._counter()
        with tf.name_scope("AccumGradOptimizer"):
            adds = [s.assign_add(tf.convert_to_tensor(g))
                    for s, (g, _) in zip(slots, grads_and_vars)]
            count = tfv1.assign_add(counter, 1, name="update_counter")
            with tf.control_dependencies(adds):
                count = tf.identity(count)

            def apply_sums():
                update = self._opt.apply_gradients(
                    [(s.read_value(), v) for s, (_, v) in zip(slots, grads_and_vars)])
                with tf.control_dependencies([update]):
                    clears = [s.assign(tf.zeros_like(s)) for s in slots]
                with tf.control_dependencies(clears):
                    return tf.constant(True)

            applied = tf.cond(tf.equal(tf.math.floormod(count, self._niter), 0), apply_sums,
                              lambda: tf.constant(False))
            ops = [applied.op]
            if global_step is not None:
                ops.append(tfv1.assign_add(global_step, 1).op)
            return tf.group(*ops, name=name or "cond_update_grad")
