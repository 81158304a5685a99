"""The SessionInit protocol, and matching the graph's variables against a source of named values.

``setup_graph`` runs while the graph can still change (it creates the ops a restore needs), then
``init(sess)`` runs once on the new session, after the variables were initialized. The
initializers that load a checkpoint or a dict build on :class:`MatchingInit`
(:mod:`tfloop.tfutils.sessinit`).
"""
import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import get_op_tensor_name
from tfloop.tfutils.varmanip import is_optimizer_slot, restore_report
from tfloop.utils import logger

__all__ = ["SessionInit", "JustCurrentSession"]


class SessionInit:
    """Base class: ``setup_graph`` adds the ops it needs (before the graph is finalized), then
    ``init(sess)`` runs once on the new session, after variables were initialized.

    Example:
        >>> class SetToZero(SessionInit):
        ...     def _setup_graph(self):
        ...         self.op = tf.compat.v1.assign(my_var, 0.0)
        ...     def _run_init(self, sess):
        ...         sess.run(self.op)
    """

    def setup_graph(self):
        self._setup_graph()

    def init(self, sess):
        with sess.graph.as_default():
            self._run_init(sess)

    def _setup_graph(self):
        """Create ops (e.g. a Saver) in the default graph."""

    def _run_init(self, sess):
        """Load values into the session."""

    def check_holds_the_model(self) -> None:
        """After ``setup_graph``: raise ValueError when the source is plainly of another model
        (it holds none of the model's trainable variables). Trainers call it before training, so
        that such a run stops instead of training from scratch at the other model's step."""


class JustCurrentSession(SessionInit):
    """Keep the freshly initialized variables as they are (the default).

    Example:
        >>> TrainConfig(model=MyModel(), data=data, session_init=JustCurrentSession())
    """


def _graph_variables():
    graph = tfv1.get_default_graph()
    variables = {}
    for var in graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES) + \
            graph.get_collection(tfv1.GraphKeys.MODEL_VARIABLES):
        variables.setdefault(var.op.name, var)
    return variables


def _describe(shape, dtype):
    return f"{list(shape)} {tf.as_dtype(dtype).name}"


def warn_initial_values(missing):
    if missing:
        logger.warning(f"{len(missing)} variable(s) keep their initial values: "
                       f"{', '.join(missing[:10]) + (', ...' if len(missing) > 10 else '')}.")


class MatchingInit(SessionInit):
    """Match the graph's variables against a source of named values (shapes and dtypes known)."""

    relaxed = False
    source_name = ""
    in_chain = False  # a ChainInit reports the variables no member restored, once for all

    def _match(self, source, prefix=None, ignore=()):
        """Pair graph variables with source keys.

        Args:
            source (dict): ``{key: (shape, tf.DType)}`` of the source.
            prefix (str): the source's key ``W`` belongs to the graph's variable ``prefix/W``.
            ignore (list[str]): graph variable names to leave alone.

        Returns:
            dict: ``{key: variable}`` of the pairs that can be loaded.
        """
        ignore = {get_op_tensor_name(n)[0] for n in ignore}
        graph_vars = _graph_variables()
        unknown = sorted(ignore - set(graph_vars))
        if unknown:
            logger.warning(f"{self}: ignore= names variables not in the graph: {unknown}.")

        def key_of(name):
            if not prefix:
                return name
            return name[len(prefix) + 1:] if name.startswith(prefix + "/") else None

        pairs, graph_only, mismatched = self._pair(graph_vars, source, key_of, ignore)
        if mismatched and not self.relaxed:
            raise ValueError(
                f"{self}: {len(mismatched)} variable(s) differ in shape or dtype between the graph "
                f"and {self.source_name}: "
                f"{'; '.join(f'{n} is {g} in the graph but {c} there' for n, g, c in mismatched)}"
                ". Use SaverRestoreRelaxed or SmartInit(..., ignore_mismatch=True) to skip them, "
                "or ignore=[names].")
        seen = {key_of(n) for n in ignore} | set(pairs) | {key_of(m[0]) for m in mismatched}
        checkpoint_only = {k: list(s) for k, (s, _) in source.items() if k not in seen}
        report = restore_report(graph_only, checkpoint_only, mismatched, self.source_name)
        if report:
            # Only checkpoint-side leftovers (optimizer slots, counters: every predictor load has
            # them) are routine; a graph variable left out or mismatched is worth a look.
            graph_side = mismatched or any(not is_optimizer_slot(n) for n in graph_only)
            (logger.info if graph_side else logger.debug)(report)
        self.foreign_message = self._foreign_source_message(
            {v.op.name for v in pairs.values()} | {m[0] for m in mismatched}, graph_vars, ignore,
            checkpoint_only)
        self.missing = [n for n in graph_only if not is_optimizer_slot(n)]
        if not self.in_chain:
            warn_initial_values(self.missing)
        self.report = report
        self.restored = sorted(v.op.name for v in pairs.values())
        return pairs

    def _pair(self, graph_vars, source, key_of, ignore):
        """``({key: variable} loadable, {graph-only name: shape}, [(name, graph, source)]
        mismatched)`` over the graph variables not in ``ignore``."""
        pairs, graph_only, mismatched = {}, {}, []
        for name, var in sorted(graph_vars.items()):
            if name in ignore:
                continue
            key = key_of(name)
            if key is None or key not in source:
                graph_only[name] = var.shape.as_list()
                continue
            shape, dtype = source[key]
            var_dtype = var.dtype.base_dtype
            if var.shape.is_compatible_with(shape) and (
                    dtype == var_dtype or self._castable(dtype, var_dtype)):
                pairs[key] = var
            else:
                mismatched.append((name, _describe(var.shape, var_dtype), _describe(shape, dtype)))
        return pairs, graph_only, mismatched

    foreign_message = None

    def check_holds_the_model(self) -> None:
        if self.foreign_message is not None:
            raise ValueError(self.foreign_message)

    def _foreign_source_message(self, found, graph_vars, ignore, source_only):
        """What is wrong with a source holding none of the model's trainable variables
        (``found``: the graph variables it has, loadable or not), or None."""
        trainable = {v.op.name for v in tfv1.trainable_variables()} & set(graph_vars)
        if not (trainable - ignore) or found & trainable:
            return None

        def listed(names):
            names = sorted(names)
            return ", ".join(names[:8]) + (", ..." if len(names) > 8 else "") if names else "none"
        return (f"{self}: {self.source_name} holds none of the model's trainable variables, so it "
                "is not a checkpoint of this model (or the names need prefix=). Trainable "
                f"variables missing there: {listed(trainable - ignore)}. Its variables not in the "
                f"graph: {listed(n for n in source_only if n != 'global_step')}. Check the path, "
                "or use prefix= / ignore= to match the names.")

    def _castable(self, src, dst):
        return self.relaxed and ((src.is_floating and dst.is_floating) or
                                 (src.is_integer and dst.is_integer))

    def __str__(self):
        return type(self).__name__


class AssignFromValues(MatchingInit):
    """Load numpy values into variables through one assign op per variable, fed at init."""

    def _build_assigns(self, pairs):
        self._assigns = []
        with tf.name_scope(type(self).__name__):
            for key, var in sorted(pairs.items()):
                ph = tfv1.placeholder(var.dtype.base_dtype, var.shape, name="value")
                self._assigns.append((key, var, ph, tfv1.assign(var, ph).op))

    def _feed(self, sess, values):
        feed = {}
        for key, var, ph, _ in self._assigns:
            value = np.asarray(values[key])
            feed[ph] = value.astype(var.dtype.base_dtype.as_numpy_dtype, copy=False).reshape(
                var.shape.as_list())
        if feed:
            sess.run([op for _, _, _, op in self._assigns], feed_dict=feed)
        logger.info(f"{self} loaded {len(feed)} variable(s) from {self.source_name}.")
