"""Seeds in tfloop's training graph: the graph-level seed, the user's global seed, op determinism,
and the eager datasets whose shuffles no seed reaches."""
from tfloop.compat import tf, tfv1
from tfloop.utils import logger
from tfloop.utils.seed import check_seed, seed_host_rngs

__all__ = ["eager_global_seed", "seed_training", "unseeded_eager_shuffles",
           "warn_unseeded_eager_shuffles"]

# Shuffle ops of tf.data and the positions of their seed and seed2 inputs.
_SHUFFLE_OPS = {"ShuffleDataset": (2, 3), "ShuffleDatasetV3": (2, 3),
                "ShuffleAndRepeatDataset": (2, 3), "ShuffleAndRepeatDatasetV2": (2, 3)}


def eager_global_seed():
    """The seed of ``tf.random.set_seed(s)`` (or ``tf.compat.v1.set_random_seed``) made in eager
    code, or None: TensorFlow keeps it in the eager context, which tfloop's own graph does not see.
    """
    from tensorflow.python.eager import context  # where TensorFlow keeps the eager global seed
    return context.global_seed()


def seed_training(graph, seed=None, deterministic=False):
    """Seed a training whose ops are about to be built in ``graph``; return the seed in use.

    The seed is ``seed``, else the user's eager global seed (:func:`eager_global_seed`), else
    None (nothing is seeded). It becomes ``graph``'s seed — every random op and tf.data shuffle
    built in it after this call gets an op seed derived from it — and seeds the host RNGs
    (:func:`tfloop.utils.seed.seed_host_rngs`). ``deterministic=True`` turns on TensorFlow's op
    determinism (``tf.config.experimental.enable_op_determinism``), for the whole process.

    Example:
        >>> seed_training(trainer.graph, seed=0)   # before the model is built
        0
    """
    seed = check_seed(seed, "seed_training")
    if seed is None:
        seed = eager_global_seed()
    if deterministic:
        tf.config.experimental.enable_op_determinism()
    if seed is None:
        return None
    graph.seed = seed
    seed_host_rngs(seed)
    logger.info(f"Seeded the training graph, Python, NumPy and DataFlow RNGs with {seed}.")
    return seed


def _const_int(nodes, name):
    node = nodes.get(name.split(":")[0].lstrip("^"))
    if node is None or node.op != "Const":
        return None
    values = tf.make_ndarray(node.attr["value"].tensor).reshape(-1)
    return int(values[0]) if values.size == 1 else None


def _graph_const_int(tensor):
    if tensor.op.type != "Const":
        return None
    values = tf.make_ndarray(tensor.op.get_attr("value")).reshape(-1)
    return int(values[0]) if values.size == 1 else None


def _unseeded_in_definition(op):
    """The shuffles without a seed in the serialized definition that ``op`` (a
    ``DatasetFromGraph``) imports."""
    definition = op.inputs[0]
    while definition.op.type != "Const" and definition.op.inputs:
        definition = definition.op.inputs[0]
    if definition.op.type != "Const":
        return []
    serialized = tf.make_ndarray(definition.op.get_attr("value")).reshape(-1)[0]
    graph_def = tfv1.GraphDef.FromString(serialized)
    nodes = {node.name: node for node in graph_def.node}
    return [node.name.split("/")[0] for node in graph_def.node
            if node.op in _SHUFFLE_OPS
            and all(_const_int(nodes, node.input[i]) == 0 for i in _SHUFFLE_OPS[node.op])]


def unseeded_eager_shuffles(graph):
    """The names of the shuffles without a seed in the eager datasets brought into ``graph``
    (their order differs on every run, whatever the graph's seed): made again in it, or imported
    as a definition. A shuffle built in a seeded graph always has a seed."""
    found = []
    for op in graph.get_operations():
        if op.type in _SHUFFLE_OPS and all(_graph_const_int(op.inputs[i]) == 0
                                           for i in _SHUFFLE_OPS[op.type]):
            found.append(op.type)
        elif op.type == "DatasetFromGraph":
            found.extend(_unseeded_in_definition(op))
    return found


def warn_unseeded_eager_shuffles(graph, seed):
    """With a ``seed`` in use, warn about every unseeded shuffle of an eager dataset in ``graph``,
    naming the fix."""
    if seed is None:
        return
    shuffles = unseeded_eager_shuffles(graph)
    if shuffles:
        logger.warning(
            f"seed={seed} does not reach the shuffle of a tf.data.Dataset built eagerly before "
            f"the seed was set ({', '.join(shuffles)}): its order differs on every run. Pass the "
            "function that builds the dataset instead (data=DatasetInput(make_dataset)), so it "
            "is built in tfloop's seeded graph, or seed the shuffle: .shuffle(n, seed=...), or "
            "call tf.random.set_seed(...) before building it.")
