"""A gate on the optimizer's update: a step can run (its batch taken, counted) without updating.

Graph mode decides what a step does when its ``session.run`` starts, so skipping one step's
update is a feed: :class:`SkipUpdateGate` builds the update inside a ``tf.cond`` on the boolean
placeholder ``skip_update`` (False unless fed), and a callback feeds True for a step whose update
is to be skipped (:class:`tfloop.SkipUpdateWhen`). The global step advances either way.
"""
from tfloop.compat import tf, tfv1
from tfloop.tfutils.optimizer import ProxyOptimizer

__all__ = ["SkipUpdateGate", "skip_update_gate"]

_GATE_COLLECTION = "tfloop_skip_update_gate"


def skip_update_gate(graph=None):
    """The gate placeholder of ``graph`` (the default graph), or None when no optimizer of the
    graph is a :class:`SkipUpdateGate`."""
    graph = graph or tfv1.get_default_graph()
    gates = graph.get_collection(_GATE_COLLECTION)
    return gates[0] if gates else None


def _gate(graph):
    gate = skip_update_gate(graph)
    if gate is None:
        with graph.name_scope(None):
            gate = tfv1.placeholder_with_default(False, [], name="skip_update")
        graph.add_to_collection(_GATE_COLLECTION, gate)
    return gate


class SkipUpdateGate(ProxyOptimizer):
    """Wrap an optimizer so that a step's update can be skipped by feeding ``skip_update=True``.

    A skipped step still takes its batch from the input and advances the global step; the
    variables and the optimizer's state (Adam's moments and step count) stay as they were.
    Only ``apply_gradients`` changes: it builds the wrapped optimizer's update inside a
    ``tf.cond``, whose slots are still created once, outside it.

    Args:
        opt (tf.compat.v1.train.Optimizer): the optimizer to wrap.

    Example:
        >>> def optimizer(self):       # in the ModelDesc
        ...     return SkipUpdateGate(tf.compat.v1.train.AdamOptimizer(1e-3))
        >>> callbacks = [SkipUpdateWhen(lambda trainer: trainer.global_step in bad_steps)]
    """

    def __init__(self, opt):
        super().__init__(opt, name="SkipUpdateGate")

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        grads_and_vars = list(grads_and_vars)
        gate = _gate(tfv1.get_default_graph())

        def update():
            with tf.control_dependencies([self._opt.apply_gradients(grads_and_vars)]):
                return tf.constant(True)

        applied = tfv1.cond(gate, lambda: tf.constant(False), update, name="skip_update_cond")
        with tf.control_dependencies([applied]):
            if global_step is None:
                return tf.group(applied, name=name or "gated_update")
            return tf.group(tfv1.assign_add(global_step, 1), name=name or "gated_update")
