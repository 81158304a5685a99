"""Looking things up in a graph, with errors that name what is missing and what exists."""
import difflib

from tfloop.compat import tf, tfv1
from tfloop.tfutils.fetch_structure import map_fetches
from tfloop.tfutils.sesscreate import get_default_sess_config
from tfloop.utils.env_info import collect_env_info

__all__ = ["UnknownNameError", "get_op_tensor_name", "get_op_or_tensor_by_name",
           "get_global_step_var", "get_global_step_value", "get_tf_version_tuple",
           "get_tensors_by_names", "NameFetchSession", "get_default_sess_config",
           "collect_env_info"]


class UnknownNameError(KeyError):
    """A tensor or op name that is not in the graph; the message lists close matches."""

    def __str__(self):
        return str(self.args[0])


def get_op_tensor_name(name):
    """Split a name into (op name, tensor name).

    ``"a:0"`` -> ``("a", "a:0")``, ``"a"`` -> ``("a", "a:0")``.
    """
    if ":" in name:
        op, _, idx = name.rpartition(":")
        if idx.isdigit():
            return op, name
    return name, name + ":0"


def _unknown_name_error(graph, name):
    candidates = [op.name for op in graph.get_operations()]
    close = difflib.get_close_matches(get_op_tensor_name(name)[0], candidates, n=5, cutoff=0.5)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    return UnknownNameError(f"No tensor or op named {name!r} in the graph.{hint}")


def get_op_or_tensor_by_name(name, graph=None):
    """Resolve a name (or a list of names) to tensors/ops of ``graph``.

    ``"x:0"`` resolves to a tensor, ``"x"`` to the tensor ``x:0`` when it exists, else to the op.
    The name of a variable resolves to the variable, so that fetching it gives its value.

    Raises:
        KeyError: naming the missing name and the closest names in the graph.
    """
    graph = graph or tfv1.get_default_graph()
    if not isinstance(name, str):
        return [get_op_or_tensor_by_name(n, graph) for n in name]
    try:
        if ":" in name:
            result = graph.get_tensor_by_name(name)
        else:
            op = graph.get_operation_by_name(name)
            result = op.outputs[0] if op.outputs else op
    except (KeyError, ValueError):
        raise _unknown_name_error(graph, name) from None
    if getattr(result, "dtype", None) == tf.resource:
        return _read_value_of_handle(graph, result)
    return result


def get_tensors_by_names(names, graph=None):
    """The tensors named ``names`` (``"fc/W"`` or ``"fc/W:0"``) in ``graph`` (default: the default
    graph), as tensorpack's function of this name; a variable's name gives its value tensor, not
    its resource handle.

    Example:
        >>> w, cost = get_tensors_by_names(["fc/W", "cost:0"])
    """
    graph = graph or tfv1.get_default_graph()
    return [get_op_or_tensor_by_name(get_op_tensor_name(n)[1], graph) for n in names]


class NameFetchSession:
    """A session whose ``run`` takes tensor names, a variable's name giving its value.

    Plain ``sess.run("fc/W:0")`` on a TF2 resource variable returns the opaque resource handle;
    this wrapper resolves every string in ``fetches`` (nested in lists, tuples, named tuples and
    mappings, which keep their types) with :func:`get_op_or_tensor_by_name` first. Other
    attributes are the wrapped session's.

    Example:
        >>> NameFetchSession(trainer.sess).run(["fc/W:0", "cost"])
    """

    def __init__(self, sess):
        self._sess = sess

    def run(self, fetches, feed_dict=None, **kwargs):
        return self._sess.run(self._resolve(fetches), feed_dict=feed_dict, **kwargs)

    def _resolve(self, fetches):
        return map_fetches(self._resolve_name, fetches)

    def _resolve_name(self, fetch):
        if isinstance(fetch, str):
            return get_op_or_tensor_by_name(fetch, self._sess.graph)
        return fetch

    def __getattr__(self, name):
        return getattr(self._sess, name)


def _read_value_of_handle(graph, handle):
    """The value tensor of the variable whose resource handle is ``handle`` (fetching the handle
    itself would give an opaque resource). The read op made when the variable was created is used,
    so this works on a finalized graph too."""
    for collection in (tfv1.GraphKeys.GLOBAL_VARIABLES, tfv1.GraphKeys.LOCAL_VARIABLES):
        for var in graph.get_collection(collection):
            if var.name == handle.name:
                value = getattr(var, "_graph_element", None)
                return var if value is None else value
    return handle


def get_global_step_var(graph=None):
    """The global step variable of ``graph`` (int64 scalar ``global_step``), created if missing."""
    graph = graph or tfv1.get_default_graph()
    with graph.as_default(), graph.name_scope(None):
        return tfv1.train.get_or_create_global_step(graph)


def get_global_step_value(sess=None):
    """The value of the global step variable in the default session."""
    sess = sess or tfv1.get_default_session()
    return int(sess.run(tfv1.train.get_global_step(sess.graph)))


def get_tf_version_tuple():
    """TensorFlow's (major, minor) version, e.g. ``(2, 21)``."""
    return tuple(int(part) for part in tf.__version__.split(".")[:2])
