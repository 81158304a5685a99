"""Gradient processors: functions of the list of ``(gradient, variable)`` pairs, applied by an
optimizer made with :func:`tfloop.tfutils.optimizer.apply_grad_processors`.

A processor sees the gradients of one model copy at a time. In a replicated data-parallel
trainer the optimizer receives every tower's gradients in one ``apply_gradients`` call; the
processors still run once per tower, on that tower's (all-reduced) gradients and device, and a
tower's variable ``tower1/fc/W`` matches a regex by its tower-0 name ``fc/W``. (tensorpack ran
processors per tower too, but matched regexes against ``tower1/fc/W``, so ``ScaleGradient`` and
``MapGradient`` silently skipped every tower but the first.)
"""
import abc
import contextlib
import inspect
import re
import sys
import weakref

from tfloop.compat import tf, tfv1
from tfloop.tfutils.summary import add_moving_summary
from tfloop.utils import logger
from tfloop.utils.checks import check_bool, check_callable, check_number, is_number
from tfloop.utils.coerce import tensorpack_float

__all__ = ["GradientProcessor", "FilterNoneGrad", "GlobalNormClip", "MapGradient",
           "SummaryGradient", "PrintGradient", "CheckGradient", "ScaleGradient"]

# Each entry: {id(variable): (tower index, tower-0 variable)} for one replicated apply_gradients.
_REPLICA_STACK = []


@contextlib.contextmanager
def replicated_variables(var_lists, devices):
    """Declare, for the ``apply_gradients`` calls made inside, that ``var_lists[i]`` are tower
    ``i``'s copies of ``var_lists[0]`` (same order), on ``devices[i]``.

    Trainers that apply every replica's gradients in one call use it so that gradient processors
    run per tower and match regexes against tower 0's variable names.

    Example:
        >>> with replicated_variables(var_lists, devices):
        ...     train_op = opt.apply_gradients(all_towers_pairs, global_step=step)
    """
    mapping = {}
    for i, variables in enumerate(var_lists):
        for variable, first in zip(variables, var_lists[0]):
            mapping[id(variable)] = (i, first)
    _REPLICA_STACK.append((mapping, list(devices)))
    try:
        yield
    finally:
        _REPLICA_STACK.pop()


def canonical_name(variable):
    """The variable's op name; for a declared tower copy, the name of tower 0's variable."""
    if _REPLICA_STACK:
        entry = _REPLICA_STACK[-1][0].get(id(variable))
        if entry is not None:
            return entry[1].op.name
    return variable.op.name


def split_by_replica(grads):
    """Split ``(grad, var)`` pairs into ``[(device or None, pairs), ...]``, one item per tower of
    the enclosing :func:`replicated_variables` (a single item with device None outside one)."""
    if not _REPLICA_STACK:
        return [(None, grads)]
    mapping, devices = _REPLICA_STACK[-1]
    groups = {}
    for g, v in grads:
        index = mapping.get(id(v), (0, v))[0]
        groups.setdefault(index, []).append((g, v))
    return [(devices[i] if i < len(devices) else None, groups[i]) for i in sorted(groups)]


def outer_graph():
    """The graph being built, or the graph that holds it when building a function such as a
    ``tf.while_loop`` body (where gradient processors may run again)."""
    graph = tfv1.get_default_graph()
    while getattr(graph, "outer_graph", None) is not None:
        graph = graph.outer_graph
    return graph


def _check_pairs(grads, who):
    try:
        pairs = [tuple(p) for p in grads]
    except TypeError:
        raise TypeError(f"{who} takes a list of (gradient, variable) pairs, got "
                        f"{grads!r}.") from None
    for p in pairs:
        if len(p) != 2 or not isinstance(p[1], tf.Variable):
            raise TypeError(f"{who} takes a list of (gradient, variable) pairs; one item is {p!r}.")
    return pairs


class GradientProcessor(abc.ABC):
    """Base class of gradient processors: override :meth:`_process`.

    :meth:`process` runs ``_process`` inside a name scope named after the class (the same scope
    each time it is called in a graph).

    Example:
        >>> class Negate(GradientProcessor):
        ...     def _process(self, grads):
        ...         return [(-g, v) for g, v in grads]
        >>> opt = apply_grad_processors(tf.compat.v1.train.GradientDescentOptimizer(0.1),
        ...                             [Negate()])
    """

    def process(self, grads):
        """Process the gradients of one model copy.

        Args:
            grads (list[tuple[tf.Tensor, tf.Variable]]): ``(gradient, variable)`` pairs.

        Returns:
            list[tuple[tf.Tensor, tf.Variable]]: the processed pairs.
        """
        grads = _check_pairs(grads, type(self).__name__)
        graph = outer_graph()
        scopes = self.__dict__.setdefault("_name_scopes", weakref.WeakKeyDictionary())
        scope = scopes.get(graph)
        with tfv1.name_scope(scope if scope is not None else type(self).__name__) as opened:
            scopes[graph] = opened
            result = self._process(grads)
        return _check_pairs(result, f"{type(self).__name__}._process's result")

    @abc.abstractmethod
    def _process(self, grads):
        """Return the new list of ``(gradient, variable)`` pairs."""


class FilterNoneGrad(GradientProcessor):
    """Drop the variables whose gradient is None (they are not updated), with a warning.

    Args:
        verbose (bool): log a warning naming those variables.

    Example:
        >>> opt = apply_grad_processors(opt, [FilterNoneGrad()])
    """

    def __init__(self, verbose=True):
        self._verbose = bool(verbose)

    def _process(self, grads):
        kept = [(g, v) for g, v in grads if g is not None]
        missing = [canonical_name(v) for g, v in grads if g is None]
        if self._verbose and missing:
            logger.warning(f"No gradient w.r.t. {len(missing)} trainable variable(s): "
                           f"{', '.join(missing)}.")
        return kept


class GlobalNormClip(GradientProcessor):
    """Clip the gradients so that their global norm (over all of them) is at most ``global_norm``
    (``tf.clip_by_global_norm``).

    Args:
        global_norm (float): the threshold, > 0.

    Example:
        >>> opt = apply_grad_processors(opt, [GlobalNormClip(5.0)])
    """

    def __init__(self, global_norm):
        global_norm = check_number(tensorpack_float(global_norm), "GlobalNormClip: global_norm",
                                   above=0)
        self._norm = float(global_norm)

    def _process(self, grads):
        clipped, _ = tf.clip_by_global_norm([g for g, _ in grads], self._norm,
                                            name="clip_by_global_norm")
        return [(g, v) for g, (_, v) in zip(clipped, grads)]


def _argument_count(func):
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    return len([p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                and p.default is p.empty])


def _full_regex(regex, who):
    if not isinstance(regex, str):
        raise TypeError(f"{who}: the regex must be a string, got {regex!r}.")
    try:
        return re.compile(regex)
    except re.error as e:
        raise ValueError(f"{who}: invalid regex {regex!r}: {e}.") from None


class MapGradient(GradientProcessor):
    """Replace the gradient of every variable whose name matches ``regex`` by ``func``'s result.

    Args:
        func: ``func(grad)`` or ``func(grad, var)`` returning the new gradient, or None to leave
            the variable without update. Variables whose gradient is None are passed through.
        regex (str): matched against the whole variable name (``re.fullmatch``, as tensorpack's
            implicit ``$``); all variables by default.

    Example:
        >>> clip = MapGradient(lambda g: tf.clip_by_value(g, -1.0, 1.0), regex=".*/W")
    """

    def __init__(self, func, regex=".*"):
        check_callable(func, "MapGradient: func")
        count = _argument_count(func)
        if count not in (1, 2):
            raise ValueError(f"MapGradient: func must take 1 argument (grad) or 2 (grad, var); "
                             f"{func!r} takes {count}.")
        self.func = (lambda grad, var: func(grad)) if count == 1 else func
        self._pattern = _full_regex(regex, type(self).__name__)
        self.regex = regex if regex.endswith("$") else regex + "$"

    def _process(self, grads):
        result, matched = [], False
        for grad, var in grads:
            if grad is None or not self._pattern.fullmatch(canonical_name(var)):
                result.append((grad, var))
                continue
            matched = True
            grad = self.func(grad, var)
            if grad is not None:
                result.append((grad, var))
        if not matched:
            logger.warning(f"[{type(self).__name__}] No variable matches the regex "
                           f"{self._pattern.pattern!r}.")
        return result


class _OncePerVariable:
    """Remember which (graph, variable name) pairs were handled already."""

    def __init__(self):
        self._seen = weakref.WeakKeyDictionary()

    def first(self, name):
        seen = self._seen.setdefault(outer_graph(), set())
        if name in seen:
            return False
        seen.add(name)
        return True


def _rms(x, name):
    return tf.sqrt(tf.reduce_mean(tf.square(tf.cast(x, tf.float32))), name=name)


def _dense(grad):
    return tf.convert_to_tensor(grad) if isinstance(grad, tf.IndexedSlices) else grad


class SummaryGradient(MapGradient):
    """Summarize each matching gradient: a histogram ``<var>-grad`` and a moving average of its
    RMS, ``SummaryGradient/<var>/rms``. Each variable is summarized once per graph (tower 0's
    copy in a replicated trainer).

    Args:
        regex (str): as in :class:`MapGradient`.
        collections (list[str]): collections of the histogram summaries (``SUMMARIES`` by default).

    Example:
        >>> opt = apply_grad_processors(opt, [SummaryGradient()])
    """

    def __init__(self, regex=".*", collections=None):
        super().__init__(self._summarize, regex)
        self._coll = collections
        self._done = _OncePerVariable()

    def _summarize(self, grad, var):
        name = canonical_name(var)
        if self._done.first(name):
            tfv1.summary.histogram(name + "-grad", _dense(grad), collections=self._coll)
            add_moving_summary(_rms(_dense(grad), name=name + "/rms"))
        return grad


class PrintGradient(MapGradient):
    """Print the shape, mean and RMS of each matching gradient (to stderr) at every step it is
    computed. Each variable is printed once per step (tower 0's copy in a replicated trainer).

    Args:
        regex (str): as in :class:`MapGradient`.

    Example:
        >>> opt = apply_grad_processors(opt, [PrintGradient(".*/W")])
    """

    def __init__(self, regex=".*"):
        super().__init__(self._print, regex)
        self._done = _OncePerVariable()

    def _print(self, grad, var):
        name = canonical_name(var)
        if not self._done.first(name):
            return grad
        value = _dense(grad)
        printed = tf.print(f"{name}-grad: shape", tf.shape(value), "mean",
                           tf.reduce_mean(tf.cast(value, tf.float32)), "rms", _rms(value, "rms"),
                           output_stream=sys.stderr)
        with tf.control_dependencies([printed]):
            if isinstance(grad, tf.IndexedSlices):
                return tf.IndexedSlices(tf.identity(grad.values), grad.indices, grad.dense_shape)
            return tf.identity(grad)


class CheckGradient(MapGradient):
    """Fail the step with ``InvalidArgumentError`` naming the variable when a gradient has a NaN or
    an Inf (``tf.debugging.check_numerics``).

    Example:
        >>> opt = apply_grad_processors(opt, [CheckGradient()])
    """

    def __init__(self):
        super().__init__(self._check)

    def _check(self, grad, var):
        message = f"CheckGradient/{canonical_name(var)}"
        if isinstance(grad, tf.IndexedSlices):
            return tf.IndexedSlices(tf.debugging.check_numerics(grad.values, message),
                                    grad.indices, grad.dense_shape)
        return tf.debugging.check_numerics(grad, message)


class ScaleGradient(MapGradient):
    """Multiply the gradients of matching variables by a constant; a multiplier of 0 leaves those
    variables without update. The first regex that matches a variable's whole name wins.

    Args:
        multipliers: a ``(regex, multiplier)`` pair or a list of them.
        verbose (bool): log each variable's multiplier (once).

    Example:
        >>> # twice the learning rate for biases, layer0 frozen
        >>> ScaleGradient([(".*/b", 2.0), ("layer0/.*", 0.0)])
    """

    def __init__(self, multipliers, verbose=True):
        if not isinstance(multipliers, list):
            multipliers = [multipliers]
        self.multipliers = []
        for item in multipliers:
            if not isinstance(item, tuple) or len(item) != 2 or not isinstance(item[0], str) or \
                    not is_number(item[1]):
                raise ValueError(f"ScaleGradient takes (regex, multiplier) pairs such as "
                                 f"('.*/b', 2.0), or a list of them; got {item!r}.")
            self.multipliers.append((item[0], float(item[1])))
        check_bool(verbose, "ScaleGradient: verbose")
        self._patterns = [(_full_regex(r, "ScaleGradient"), m) for r, m in self.multipliers]
        self._verbose = verbose
        self._logged = _OncePerVariable()
        super().__init__(self._scale)

    def _scale(self, grad, var):
        name = canonical_name(var)
        for pattern, multiplier in self._patterns:
            if not pattern.fullmatch(name):
                continue
            if self._verbose and self._logged.first(name):
                logger.info(f"Gradient of {name!r} is multiplied by {multiplier}.")
            if multiplier == 0:
                return None
            if isinstance(grad, tf.IndexedSlices):
                return tf.IndexedSlices(grad.values * multiplier, grad.indices, grad.dense_shape)
            return grad * multiplier
        return grad
