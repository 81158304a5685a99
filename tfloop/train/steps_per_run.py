"""``steps_per_run``: k training steps inside one session call, as an in-graph loop.

With ``steps_per_run=k`` each call of the training op runs a ``tf.while_loop`` of k - 1 training
steps (inputs, forward, gradients, update, global step) and then the trainer's usual step, all in
one ``session.run``; the Python side of a step (callbacks, session call) is paid once per k steps.

What callbacks see:

* ``before_run`` / ``after_run`` / ``trigger_step`` run once per session call. Fetches come from
  the last of its k steps (the tensors of the training tower belong to that step); a variable
  read made outside the training step (e.g. a weight histogram) may see the weights of any of
  the k steps.
* ``global_step`` advances by k per call; ``local_step`` is the last step of the call
  (k - 1, 2k - 1, ... within the epoch), so "last step of the epoch" checks still work.
* ``steps_per_epoch`` must be a multiple of k: epochs, and everything scheduled by epoch, land
  exactly where they would with k = 1.
* Anything scheduled by step can only happen between calls: ``PeriodicTrigger`` /
  ``PeriodicCallback`` with ``every_k_steps`` and ``MergeAllSummaries(period)`` must use a
  multiple of k (refused otherwise), and a step-based ``ScheduledHyperParamSetter`` point that
  is not a multiple of k takes effect at the next multiple (a warning names such points).
* The k - 1 in-loop steps run the model in a tower that is not the main training tower: moving
  summaries, summaries and ``UPDATE_OPS`` (e.g. batch-norm statistics) are updated by the last
  step only, and random ops inside the loop (dropout) draw from their own stream. The model
  function is called a second time, inside the loop: it must build the cost from its inputs and
  its ``get_variable`` variables (a tensor it takes from a graph collection filled by the first
  call would be computed once per call, outside the loop).
* The input must come from the graph (``DatasetInput``, ``DummyConstantInput``); a
  ``FeedInput`` feeds one batch per call and is refused.

Example:
    >>> launch_train_with_config(TrainConfig(model=MyModel(), data=DatasetInput(make_dataset),
    ...                                      steps_per_epoch=1000, steps_per_run=10),
    ...                          SimpleTrainer())
"""
import contextlib

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_global_step_var
from tfloop.tfutils.step_graph import ancestors, colocate_gradients
from tfloop.tfutils.tower import TowerContext
from tfloop.utils.checks import check_int, is_int

__all__ = ["check_steps_per_run", "StepsPerRunLoop"]

_FEED_OP_TYPES = ("Placeholder", "PlaceholderWithDefault")


def check_steps_per_run(value):
    """Return ``value`` as an int if it is a valid ``steps_per_run`` (an int >= 1), else raise
    TypeError (not an int) or ValueError (below 1)."""
    if not is_int(value):
        raise TypeError(f"steps_per_run must be an int >= 1, got {value!r}.")
    return check_int(value, "steps_per_run", at_least=1)


class StepsPerRunLoop:
    """The in-graph loop of the first k - 1 steps of each session call.

    Build the trainer's own step inside :meth:`last_step`, then call :meth:`build` with what that
    step used: the ops of that step that the training op needs and that read or change state
    (variable reads, the input iterator, updates) are made to wait for the loop; ops that
    initialize variables never do.

    Args:
        steps_per_run (int): k, the training steps per session call (>= 2).

    Example:
        >>> loop = StepsPerRunLoop(10)
        >>> with loop.last_step():
        ...     inputs = source.get_input_tensors()
        ...     cost = tower_func(*inputs)
        ...     grads = opt.compute_gradients(cost)
        ...     train_op = opt.apply_gradients(grads, global_step=get_global_step_var())
        >>> loop.build(train_op, source, inputs, model.build_graph, opt, grads)
    """

    def __init__(self, steps_per_run):
        self.steps_per_run = check_steps_per_run(steps_per_run)
        if self.steps_per_run < 2:
            raise ValueError(f"StepsPerRunLoop is for steps_per_run >= 2, got {steps_per_run}.")
        self._step_ops = None
        self.count = None

    @contextlib.contextmanager
    def last_step(self):
        """A context that records the ops of the trainer's own step (the last of each call)."""
        graph = tfv1.get_default_graph()
        start = len(graph.get_operations())
        yield
        self._step_ops = graph.get_operations()[start:]

    def build(self, train_op, input, last_inputs, tower_fn, opt, grads_and_vars):
        """Build the loop of k - 1 steps and make the last step wait for it.

        Args:
            train_op (tf.Operation): the last step's training op.
            input (InputSource): the trainer's input source; called again inside the loop body.
            last_inputs (list[tf.Tensor]): the input tensors of the last step.
            tower_fn (callable): the model's tower function (input tensors -> cost).
            opt (tf.compat.v1.train.Optimizer): the optimizer of the last step.
            grads_and_vars (list): the last step's gradients and variables.

        Returns:
            tf.Tensor: the number of steps the loop ran.
        """
        if self._step_ops is None:
            raise RuntimeError("Build the trainer's step inside StepsPerRunLoop.last_step() first.")
        fed = [t.name for t in last_inputs if t.op.type in _FEED_OP_TYPES]
        if fed:
            raise ValueError(
                f"steps_per_run={self.steps_per_run} needs an input source that makes a new batch "
                f"inside the graph (DatasetInput, DummyConstantInput); {input} feeds "
                f"{', '.join(fed)} once per session call.")
        var_list = [v for _, v in grads_and_vars]
        global_step = get_global_step_var()
        variables = set(v.name for v in tfv1.global_variables())

        def body(i):
            inputs = input.get_input_tensors()
            with TowerContext("", is_training=True, index=1):
                cost = tower_fn(*inputs)
            grads = opt.compute_gradients(
                cost, var_list=var_list,
                colocate_gradients_with_ops=colocate_gradients(cost, var_list))
            grads = [(g, v) for g, v in grads if g is not None]
            with tf.control_dependencies([opt.apply_gradients(grads, global_step=global_step)]):
                return i + 1

        with tf.name_scope("steps_per_run"):
            self.count = tfv1.while_loop(lambda i: i < self.steps_per_run - 1, body,
                                         [tf.constant(0)], parallel_iterations=1)
        _drop_foreign_collection_items(tfv1.get_default_graph())
        created = sorted(v.name for v in tfv1.global_variables() if v.name not in variables)
        if created:
            raise ValueError(
                f"steps_per_run={self.steps_per_run}: calling the model again inside the loop "
                f"created new variables ({', '.join(created)}). Create variables with "
                "tf.compat.v1.get_variable (or tfloop.models layers) so that later calls reuse "
                "them.")
        initializing = ancestors([v.initializer for v in
                                   tfv1.global_variables() + tfv1.local_variables()])
        step = ancestors([train_op])
        for op in self._step_ops:
            if op in step and op not in initializing and _touches_state(op):
                # The op exists already; adding a control input is the only way to order it.
                op._add_control_input(self.count.op)
        return self.count


def _drop_foreign_collection_items(graph):
    """The loop body shares the graph's collections: take out what it put there (its summaries,
    update ops ...), which belong to the body's own graph and cannot be run from outside."""
    for key in graph.get_all_collection_keys():
        items = graph.get_collection_ref(key)
        items[:] = [x for x in items if getattr(x, "graph", graph) is graph]


def _touches_state(op):
    return op.op_def.is_stateful or any(t.dtype == tf.resource for t in op.inputs)
