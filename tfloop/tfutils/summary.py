"""Summaries a model declares in ``build_graph``: moving averages of scalars, statistics of tensors
and of trainable variables.

They belong to the main training tower only: in any other tower (another device's replica, an
inference tower) these functions do nothing and return ``[]``, so ``build_graph`` can call them
unconditionally. Outside any tower (e.g. in a callback's ``_setup_graph``) they always work.

Moving averages are updated by the ``MovingAverageSummary`` callback along with every step; the
other summaries are ``tf.compat.v1.summary`` ops, fetched by ``MergeAllSummaries``.
"""
import re
import weakref

from tfloop.compat import tf, tfv1
from tfloop.tfutils.step_graph import variable_reads_beyond
from tfloop.tfutils.tower import get_current_tower_context
from tfloop.utils import logger
from tfloop.utils.checks import is_number
from tfloop.utils.naming import MOVING_SUMMARY_OPS_KEY

__all__ = ["add_moving_summary", "add_cost_summary", "add_tensor_summary", "add_param_summary",
           "add_activation_summary",
           "average_finite_values_only", "MOVING_SUMMARY_OPS_KEY", "moving_summary_name"]

EMA_SCOPE = "EMA"

_FINITE_ONLY_GRAPHS: "weakref.WeakSet" = weakref.WeakSet()
_TOWER_PREFIX = re.compile(r"^(tower\d+|towerp\d+)/")


def _strip_tower_prefix(name):
    return _TOWER_PREFIX.sub("", name)


def _in_main_training_tower():
    ctx = get_current_tower_context()
    return ctx is None or ctx.is_main_training_tower


def _as_float(x):
    return tf.cast(x, tf.float32)


# type -> (summary function, statistic of the tensor to summarize); the tag is <name>-<type>,
# but <name>-summary for "scalar" (the value of a scalar tensor itself), as tensorpack tags it.
_SUMMARY_TYPES = {
    "scalar": (tfv1.summary.scalar, _as_float),
    "histogram": (tfv1.summary.histogram, lambda x: x),
    "sparsity": (tfv1.summary.scalar, tf.nn.zero_fraction),
    "mean": (tfv1.summary.scalar, lambda x: tf.reduce_mean(_as_float(x))),
    "rms": (tfv1.summary.scalar, lambda x: tf.sqrt(tf.reduce_mean(tf.square(_as_float(x))))),
}


def _check_types(types, where):
    if isinstance(types, str):
        types = [types]
    types = list(types)
    unknown = [t for t in types if t not in _SUMMARY_TYPES]
    if unknown or not types:
        raise ValueError(f"{where}: summary types must be a non-empty list of "
                         f"{', '.join(sorted(_SUMMARY_TYPES))}; got {types!r}.")
    return list(dict.fromkeys(types))


def create_scalar_summary(name, v):
    """A ``tf.compat.v1.Summary`` holding the scalar ``v`` under the tag ``name``, as tensorpack's
    callbacks hand to ``monitors.put_summary``.

    Example:
        >>> self.trainer.monitors.put_summary(create_scalar_summary("val-error", 0.12))
    """
    if not isinstance(name, str):
        raise TypeError(f"create_scalar_summary: the tag must be a string, got {name!r}.")
    return tfv1.Summary(value=[tfv1.Summary.Value(tag=name, simple_value=float(v))])


def add_tensor_summary(x, types, name=None, collections=None, main_tower_only=True):
    """Summarize a tensor with statistics, under the tags ``<name>-<type>``.

    Args:
        x (tf.Tensor or tf.Variable): the tensor.
        types (list[str]): any of ``"scalar"`` (the value of a scalar tensor, tagged
            ``<name>-summary``), ``"histogram"``, ``"sparsity"`` (fraction of zeros), ``"mean"``
            and ``"rms"`` (root mean square).
        name (str): the tag prefix; ``x``'s op name (tower prefix removed) by default.
        collections (list[str]): summary collections (``tf.compat.v1.GraphKeys.SUMMARIES`` by
            default, which ``MergeAllSummaries`` fetches).
        main_tower_only (bool): do nothing in towers other than the main training tower.

    Returns:
        list[tf.Tensor]: the summary ops created (empty when skipped).

    Example:
        >>> add_tensor_summary(logits, ["histogram", "rms"])     # tags logits-histogram, logits-rms
    """
    if not isinstance(x, (tf.Tensor, tf.Variable)):
        raise TypeError(f"add_tensor_summary needs a tf.Tensor or tf.Variable, got {x!r}.")
    types = _check_types(types, f"add_tensor_summary({x.name})")
    if "scalar" in types and x.shape.rank not in (0, None):
        raise ValueError(f"add_tensor_summary({x.name}, ['scalar']): 'scalar' summarizes a "
                         f"scalar tensor, and {x.name} has shape {x.shape}; use 'mean' (or "
                         "'histogram') for it, or reduce it to a scalar first.")
    if main_tower_only and not _in_main_training_tower():
        return []
    name = _strip_tower_prefix(name if name is not None else x.op.name)
    graph = tfv1.get_default_graph()
    ops = []
    with graph.name_scope(None):
        value = tf.convert_to_tensor(x)
        for kind in types:
            summary_fn, statistic = _SUMMARY_TYPES[kind]
            tag = f"{name}-{'summary' if kind == 'scalar' else kind}"
            ops.append(summary_fn(tag, statistic(value), collections=collections))
    return ops


def add_activation_summary(x, types=None, name=None, collections=None):
    """Summarize an activation (a tensor of rank >= 2): by default its sparsity, RMS and
    histogram, under the tags ``<name>-<type>``. Does nothing outside the main training tower; a
    tensor of rank < 2 is skipped with a warning.

    Args:
        x (tf.Tensor): the activation.
        types (list[str]): as in :func:`add_tensor_summary`; ``["sparsity", "rms", "histogram"]``
            by default.
        name (str): the tag prefix; ``x``'s op name by default.
        collections (list[str]): summary collections.

    Returns:
        list[tf.Tensor]: the summary ops created.

    Example:
        >>> add_activation_summary(tf.nn.relu(conv, name="relu0"))   # relu0-sparsity, ...
    """
    if not isinstance(x, (tf.Tensor, tf.Variable)):
        raise TypeError(f"add_activation_summary needs a tf.Tensor, got {x!r}.")
    if x.shape.rank is not None and x.shape.rank < 2:
        logger.warning(f"add_activation_summary: {x.name} has rank {x.shape.rank}; activations "
                       f"of rank >= 2 are summarized, use add_tensor_summary for others.")
        return []
    types = ["sparsity", "rms", "histogram"] if types is None else types
    return add_tensor_summary(x, types, name=name, collections=collections)


def add_param_summary(*summary_lists, collections=None):
    """Summarize the trainable variables whose names match a regex.

    Each argument is ``(regex, types)``; a variable is summarized when the regex matches its whole
    op name (``re.fullmatch``, e.g. ``"fc0/W"``), with the types of every pair that matches. Tags
    are ``param-summary/<variable name>-<type>``.

    Args:
        summary_lists: ``(regex, types)`` pairs; ``types`` as in :func:`add_tensor_summary`.
        collections (list[str]): summary collections (``SUMMARIES`` by default).

    Returns:
        list[tf.Tensor]: the summary ops created (empty outside the main training tower).

    Example:
        >>> add_param_summary((".*/W", ["histogram", "rms"]), ("fc.*/b", ["mean"]))
    """
    pairs = [_param_summary_pair(item) for item in summary_lists]
    if not _in_main_training_tower():
        return []
    params = tfv1.get_collection(tfv1.GraphKeys.TRAINABLE_VARIABLES)
    ops = []
    matched = set()
    for param in params:
        name = param.op.name
        types = []
        for pattern, pattern_types in pairs:
            if pattern.fullmatch(name):
                matched.add(pattern.pattern)
                types.extend(pattern_types)
        if types:
            ops.extend(add_tensor_summary(param, list(dict.fromkeys(types)),
                                          name="param-summary/" + _strip_tower_prefix(name),
                                          collections=collections))
    for pattern, _ in pairs:
        if pattern.pattern not in matched:
            logger.warning(f"add_param_summary: regex {pattern.pattern!r} matches no trainable "
                           f"variable; they are: {', '.join(p.op.name for p in params) or 'none'}.")
    return ops


def _param_summary_pair(item):
    """``(compiled regex, checked types)`` of one ``(regex, types)`` of add_param_summary."""
    if not isinstance(item, (tuple, list)) or len(item) != 2 or not isinstance(item[0], str):
        raise ValueError("add_param_summary takes (regex, types) pairs, e.g. ('.*/W', "
                         f"['histogram']); got {item!r}.")
    try:
        pattern = re.compile(item[0])
    except re.error as e:
        raise ValueError(f"add_param_summary: invalid regex {item[0]!r}: {e}.") from None
    return pattern, _check_types(item[1], f"add_param_summary({item[0]!r})")


def moving_summary_name(tensor):
    """The monitor name of a moving average made by :func:`add_moving_summary` (its op name
    without the ``EMA/`` scope)."""
    name = tensor.op.name
    prefix = EMA_SCOPE + "/"
    return name[len(prefix):] if name.startswith(prefix) else name


def _flatten(tensors):
    flat = []
    for t in tensors:
        if isinstance(t, (list, tuple)):
            flat.extend(t)
        else:
            flat.append(t)
    return flat


def add_moving_summary(*tensors, decay=0.95, collection=MOVING_SUMMARY_OPS_KEY):
    """Track exponential moving averages of scalar tensors, put to the monitors every epoch.

    Each average is updated with every training step by the ``MovingAverageSummary`` callback (one
    of the default callbacks) and put to the monitors under the tensor's name (tower prefix
    removed), e.g. ``"cost"``. The average is bias-corrected: after the first step it equals the
    first value, not ``(1 - decay)`` times it. Its state lives in non-trainable variables under
    ``EMA/``, so it is saved with checkpoints.

    Args:
        tensors: scalar tensors (lists of them are accepted too).
        decay (float): in [0, 1); larger is smoother.
        collection (str): the collection of the averaged tensors (what ``MovingAverageSummary``
            runs).

    Returns:
        list[tf.Tensor]: the updated averages, one per tensor (empty outside the main training
        tower). Evaluating one runs its update.

    Example:
        >>> cost = tf.reduce_mean(loss, name="cost")
        >>> add_moving_summary(cost, accuracy)      # monitors get "cost" and "accuracy"
    """
    tensors = _flatten(tensors)
    if not is_number(decay) or not 0 <= decay < 1:
        raise ValueError(f"add_moving_summary: decay must be a number in [0, 1), got {decay!r}.")
    graph = tfv1.get_default_graph()
    for t in tensors:
        if not isinstance(t, (tf.Tensor, tf.Variable)):
            raise TypeError(f"add_moving_summary takes scalar tensors, got {t!r}.")
        if t.graph is not graph:
            raise ValueError(f"add_moving_summary: {t.name} is not in the graph being built.")
        if t.shape.rank != 0:
            raise ValueError(f"add_moving_summary takes scalar tensors; {t.name} has shape "
                             f"{t.shape}: reduce it first, e.g. with tf.reduce_mean.")
    if not _in_main_training_tower():
        return []
    existing = {moving_summary_name(t) for t in graph.get_collection(collection)}
    averages = []
    for t in tensors:
        name = _strip_tower_prefix(t.op.name)
        if name in existing:
            raise ValueError(f"add_moving_summary: a moving average named {name!r} already exists; "
                             "each tensor can be averaged once.")
        existing.add(name)
        average = _build_moving_average(graph, t, name, float(decay))
        graph.add_to_collection(collection, average)
        averages.append(average)
    return averages


def add_cost_summary(cost, name="cost", train_op=None):
    """Record the training cost for the monitors, unless the model already averages it.

    Trainers call this on the cost that the main training tower returns, once the training op
    exists, so that every run records ``cost`` in ``stats.json``, TensorBoard and on the console
    without user code: a moving average updated with every step (``MovingAverageSummary``), which
    costs next to nothing when the update computes what the cost is computed from anyway. When
    computing the cost would read variables that ``train_op`` does not need (a cost linear in the
    variables, a weight-decay term of its own: see
    :func:`tfloop.tfutils.step_graph.variable_reads_beyond`), the cost is recorded from the last
    step of each epoch instead (a summary that ``MergeAllSummaries`` fetches with it), so that
    monitoring does not add that work to every step. Nothing is added outside the main training
    tower, or when a moving average named like the cost (or ``name``) exists already (the model
    called ``add_moving_summary(cost)`` itself, which averages over every step at any price).

    Args:
        cost (tf.Tensor): the scalar cost.
        name (str): the monitor name to use when the cost's own op name is not ``name``.
        train_op (tf.Operation): the training op; None: the moving average, whatever the cost
            needs.

    Returns:
        tf.Tensor or None: the moving average or the summary, or None when none was added.

    Example:
        >>> add_cost_summary(tf.reduce_mean(loss), train_op=train_op)   # monitors get "cost"
    """
    if not _in_main_training_tower():
        return None
    graph = cost.graph
    existing = {moving_summary_name(t) for t in graph.get_collection(MOVING_SUMMARY_OPS_KEY)}
    own_name = _strip_tower_prefix(cost.op.name)
    if own_name in existing or name in existing:
        return None
    reads = [] if train_op is None else variable_reads_beyond(cost, train_op)
    if reads:
        return _add_epoch_cost_summary(cost, name, reads)
    if own_name != name:
        cost = tf.identity(cost, name=name)
    return add_moving_summary(cost)[0]


def _add_epoch_cost_summary(cost, name, reads):
    shown = ", ".join(op.name for op in reads[:3]) + (", ..." if len(reads) > 3 else "")
    logger.info(f"The cost {cost.name} is recorded at the last step of each epoch, not averaged "
                f"over every step: computing it reads variables that the update does not need "
                f"({shown}). add_moving_summary(cost) in build_graph averages it over every "
                "step, at the price of that work in every step.")
    with cost.graph.name_scope(None), cost.graph.name_scope("cost_summary"):
        summary = tf.raw_ops.ScalarSummary(tags=name, values=cost)
    cost.graph.add_to_collection(tfv1.GraphKeys.SUMMARIES, summary)
    return summary


def average_finite_values_only(graph):
    """Make the moving averages that ``graph`` builds from now on skip inf and nan values.

    ``TrainConfig(mixed_precision="float16")`` sets it: loss scaling skips the steps whose float16
    values overflow, and the averages skip them too (``skipped_steps`` counts them) instead of
    turning nan for the rest of the run. In float32 a nan cost means the run diverged, so the
    averages keep showing it there.

    Example:
        >>> average_finite_values_only(trainer.graph)     # before the model is built
    """
    _FINITE_ONLY_GRAPHS.add(graph)


def _build_moving_average(graph, tensor, name, decay):
    with graph.name_scope(f"{EMA_SCOPE}/{name}/"):
        value = tf.cast(tensor, tf.float32)
        with graph.control_dependencies(None):  # initializers must not depend on the model's ops
            biased = tfv1.Variable(tf.zeros([]), trainable=False, name="biased")
            decay_power = tfv1.Variable(tf.ones([]), trainable=False, name="decay_power")
        next_biased, next_power = decay * biased + (1.0 - decay) * value, decay_power * decay
        finite_only = graph in _FINITE_ONLY_GRAPHS
        if finite_only:
            finite = tf.math.is_finite(value)
            next_biased = tf.where(finite, next_biased, biased.read_value())
            next_power = tf.where(finite, next_power, decay_power.read_value())
        new_biased = biased.assign(next_biased)
        new_power = decay_power.assign(next_power)
        corrected = new_biased / (1.0 - new_power)
        if finite_only:   # before the first finite value the power is still 1: show the value
            corrected = tf.where(new_power < 1.0, corrected, value)
    with graph.name_scope(EMA_SCOPE + "/"):
        return tf.identity(corrected, name=name)
