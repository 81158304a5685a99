"""Building a predict tower: the model's tower function called for inference.

One path for every consumer: ``trainer.get_predictor``, ``InferenceRunner`` and
``DataParallelInferenceRunner`` build their towers beside the training tower (sharing its
variables), the offline predictors and the exporter build theirs in a fresh graph (creating the
variables, which a checkpoint then fills).
"""
import contextlib
import difflib
import re

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import UnknownNameError, get_op_tensor_name
from tfloop.tfutils.eager_capture import explain_eager_capture
from tfloop.tfutils.sessinit import ChainInit, JustCurrentSession
from tfloop.tfutils.tower import TowerContext
from tfloop.tfutils.varmanip import is_optimizer_slot
from tfloop.utils import logger

__all__ = ["build_predict_tower", "make_input_placeholders", "device_scope", "lookup_tensors",
           "check_session_init_complete"]

# What a tower built beside training may add to graph collections: variables (none are expected)
# and what session creation and checkpoints need. Everything else it adds (summaries, update ops,
# moving averages, losses) is dropped, so that no training-time callback fetches a predict tensor.
_KEPT_COLLECTIONS = frozenset([
    tfv1.GraphKeys.GLOBAL_VARIABLES, tfv1.GraphKeys.LOCAL_VARIABLES,
    tfv1.GraphKeys.TRAINABLE_VARIABLES, tfv1.GraphKeys.MODEL_VARIABLES,
    tfv1.GraphKeys.METRIC_VARIABLES, tfv1.GraphKeys.TABLE_INITIALIZERS,
    tfv1.GraphKeys.RESOURCES, tfv1.GraphKeys.LOCAL_RESOURCES, tfv1.GraphKeys.SAVEABLE_OBJECTS,
    tfv1.GraphKeys.ASSET_FILEPATHS, tfv1.GraphKeys.COND_CONTEXT, tfv1.GraphKeys.WHILE_CONTEXT,
])


def device_scope(device):
    """The device scope of a tower: a GPU index (no scope without that GPU; negative: the CPU), a
    device string, or None (TensorFlow places it)."""
    if device is None:
        return contextlib.nullcontext()
    if isinstance(device, str):
        return tf.device(device)
    if device < 0:
        return tf.device("/cpu:0")
    if device < len(tf.config.list_physical_devices("GPU")):
        return tf.device(f"/gpu:{device}")
    return contextlib.nullcontext()


@contextlib.contextmanager
def _training_collections_guarded(graph):
    before = {key: list(graph.get_collection(key)) for key in graph.get_all_collection_keys()}
    yield
    dropped = []
    for key in graph.get_all_collection_keys():
        old = before.get(key, [])
        if key not in _KEPT_COLLECTIONS and len(graph.get_collection(key)) != len(old):
            graph.get_collection_ref(key)[:] = old
            dropped.append(str(key))
    if dropped:
        logger.info(f"The predict tower's additions to collections {', '.join(sorted(dropped))} "
                    "are left out of training.")


def make_input_placeholders(input_signature: list, tower_name: str = "") -> list:
    """One placeholder per input spec, named like the input (inside the tower's name scope)."""
    scope = tf.name_scope(tower_name + "/") if tower_name else contextlib.nullcontext()
    with scope:
        return [tfv1.placeholder(s.dtype, s.shape, name=s.name or f"input{i}")
                for i, s in enumerate(input_signature)]


def build_predict_tower(tower_func, inputs: list, tower_name: str, device=None,
                        beside_training: bool = False):
    """Call ``tower_func(*inputs)`` under ``TowerContext(tower_name, is_training=False)``.

    Args:
        tower_func (TowerFunc): the model's tower function.
        inputs (list[tf.Tensor]): the tower's input tensors.
        tower_name (str): the tower's name scope (``""`` for a predictor's only tower).
        device: see :func:`device_scope`.
        beside_training (bool): the graph holds a training tower: the predict tower must share
            its variables (creating one is an error) and its collection additions are dropped.

    Returns:
        TowerTensorHandle: the tower built.
    """
    graph = tfv1.get_default_graph()
    variables_before = set(graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES))
    guard = _training_collections_guarded(graph) if beside_training else contextlib.nullcontext()
    with guard, device_scope(device), TowerContext(tower_name, is_training=False), \
            explain_eager_capture("The model's build_graph (in a predict tower)"):
        tower_func(*inputs)
    if beside_training:
        new_variables = [v.name for v in graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)
                         if v not in variables_before]
        if new_variables:
            raise ValueError(f"Building the predict tower {tower_name!r} created new variables "
                             f"{new_variables}: create variables with "
                             "tf.compat.v1.get_variable so that towers share them.")
    return tower_func.towers[-1]


def _close_names(tower, name):
    graph = tower._graph
    prefix = tower.ns_name + "/" if tower.ns_name else ""
    candidates = set()
    for op in graph.get_operations():
        if not op.outputs:
            continue
        op_name = op.name[len(prefix):] if prefix and op.name.startswith(prefix) else op.name
        candidates.add(op_name)
    return difflib.get_close_matches(get_op_tensor_name(name)[0], sorted(candidates), n=5,
                                     cutoff=0.5)


_NOT_OUTPUTS = frozenset(["Const", "Placeholder", "PlaceholderWithDefault", "ReadVariableOp",
                          "VarHandleOp", "VariableV2"])


def _named_by_the_model(name, op, used):
    """Whether an op is one a model names as a result: a layer's ``<layer>/output``, or an op not
    named after its type (TensorFlow's default) that is at the top level or that nothing uses."""
    if name.endswith("/output"):
        return True
    default = re.sub(r"(?<!^)(?=[A-Z])", "_", op.type).lower()
    base = re.sub(r"_\d+$", "", name.rpartition("/")[2]).lower()
    if base in (op.type.lower(), default):       # TensorFlow named it after its type
        return False
    return "/" not in name or any(t.name not in used for t in op.outputs)


def _likely_outputs(tower, limit=12):
    """Names of the tower's floating-point tensors that look like the model's results (its
    outputs, layer outputs, its cost), the last ``limit`` of them in graph order."""
    graph = tower._graph
    prefix = tower.ns_name + "/" if tower.ns_name else ""
    operations = graph.get_operations()
    used = {t.name for op in operations for t in op.inputs}
    found = [op.name[len(prefix):] for op in operations
             if op.name.startswith(prefix) and op.type not in _NOT_OUTPUTS
             and any(t.dtype.is_floating for t in op.outputs)
             and _named_by_the_model(op.name[len(prefix):], op, used)]
    return found[-limit:]


def _unknown_name_hint(tower, name):
    close = _close_names(tower, name)
    if close:
        return f" Close matches: {', '.join(close)}."
    likely = _likely_outputs(tower)
    if likely:
        return f" No close match; the model's results in the graph: {', '.join(likely)}."
    return ""


def lookup_tensors(tower, names: list, what: str) -> list:
    """The tensors ``names`` of ``tower``; an unknown name is an error listing close matches.

    Args:
        tower (TowerTensorHandle): where to look (the tower's scope first, then the graph).
        names (list[str]): tensor or op names (``"prob"``, ``"prob:0"``).
        what (str): what the names are, for the error (e.g. ``"output_names"``).
    """
    tensors = []
    for name in names:
        try:
            tensor = tower.get_tensor(name)
        except UnknownNameError:
            raise UnknownNameError(f"{what}: no tensor named {name!r} in the predict graph."
                                   f"{_unknown_name_hint(tower, name)}") from None
        if not isinstance(tensor, (tf.Tensor, tfv1.Variable)):
            raise TypeError(f"{what}: {name!r} is the op {tensor.name}, which has no output; give "
                            "the name of a tensor.")
        tensors.append(tensor)
    return tensors


def _leaves(init):
    if isinstance(init, ChainInit):
        return [leaf for sub in init.inits for leaf in _leaves(sub)]
    return [init]


def _source_names(init):
    path = getattr(init, "path", None)
    if path is not None:
        return [name for name, _ in tf.train.list_variables(path)]
    return list(getattr(init, "values", {}))


def check_session_init_complete(session_init, graph) -> None:
    """Raise when a set-up checkpoint or dict leaves variables of a predict graph unloaded."""
    variables = sorted({v.op.name for v in graph.get_collection(tfv1.GraphKeys.GLOBAL_VARIABLES)})
    if not variables:
        return
    leaves = _leaves(session_init)
    if all(isinstance(leaf, JustCurrentSession) for leaf in leaves):
        logger.warning(f"No session_init: the {len(variables)} variable(s) of "
                       "the model keep their initial values.")
        return
    restored, ignored, source = set(), set(), []
    for leaf in leaves:
        if isinstance(leaf, JustCurrentSession):
            continue
        if not hasattr(leaf, "restored"):
            return  # a SessionInit of the user's: it says nothing about what it loaded
        restored.update(leaf.restored)
        ignored.update(n.split(":")[0] for n in getattr(leaf, "ignore", ()))
        source.extend(_source_names(leaf))
    missing = [v for v in variables if v not in restored and v not in ignored]
    if missing:
        unexpected = sorted({n for n in source if n not in restored and not is_optimizer_slot(n)
                             and n != "global_step"})
        where = ", ".join(getattr(leaf, "source_name", str(leaf)) for leaf in leaves
                          if not isinstance(leaf, JustCurrentSession))
        raise ValueError(
            f"session_init ({where}) does not hold {len(missing)} variable(s) of the model: "
            f"{', '.join(missing)}. It holds {', '.join(unexpected) or 'nothing else'}"
            " that the model does not have. Is it a checkpoint of another model?")
