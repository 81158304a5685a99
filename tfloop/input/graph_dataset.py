"""A ``tf.data.Dataset`` inside the graph being built, wherever the dataset was made.

tfloop trains in a ``tf.compat.v1`` graph of its own, but most datasets are built eagerly
(``tf.data.Dataset.from_tensor_slices(...).shuffle(...).batch(...)``, ``tensorflow_datasets``).
An eager dataset is brought into tfloop's graph in one of two ways, both giving the same pipeline
(same elements, same order, same ``element_spec``), which runs inside tfloop's session like one
written in that graph, so that its iterator position can be saved for resuming:

- :class:`~tfloop.input.eager_pipeline.EagerPipeline`, when tfloop knows every stage of the
  pipeline (arrays in memory under ``batch``, ``shuffle``, ``map``, ``cache`` ...): the stages are
  made again in tfloop's graph, and the arrays fed rather than copied;
- :class:`SerializedDataset`, for any other: TensorFlow serializes the dataset's definition (its
  own graph, with the data and the functions of ``map``, ``interleave`` ...), which tfloop imports.

Pipelines on Python functions (``from_generator``, ``py_function``, ``numpy_function``) are
brought in too: their ops call back into this process's Python functions, which are kept alive
with the graph (:func:`~tfloop.input.eager_pipeline.keep_with_graph`).
"""
import contextlib

from tfloop.compat import tf, tfv1
from tfloop.input.eager_pipeline import EagerPipeline, UnknownStage, keep_with_graph
from tfloop.utils import logger

__all__ = ["SerializedDataset", "as_graph_dataset", "built_eagerly", "eager_definition"]

# tf.data.experimental.ExternalStatePolicy.IGNORE: state outside the pipeline (a Python function,
# a random seed generator) is referenced, not copied; this process still owns it.
_IGNORE_EXTERNAL_STATE = 1

# The size of a serialized definition from which bringing the dataset in is slow enough to say so.
LARGE_DEFINITION_BYTES = 64 << 20


def built_eagerly(dataset):
    """Whether ``dataset`` was built eagerly (outside any graph)."""
    # An eager tensor has no graph: its ``graph`` attribute raises AttributeError.
    return not hasattr(tf.data.experimental.to_variant(dataset), "graph")


def _eager_mode():
    if tf.executing_eagerly():
        return contextlib.nullcontext()
    return tf.__internal__.eager_context.eager_mode()


def _without_devices(serialized):
    """The serialized pipeline without device names: they are the eager context's
    (``/job:localhost/...``), which the training session (a cluster's, say) may not have."""
    graph_def = tfv1.GraphDef.FromString(serialized)
    for node in graph_def.node:
        node.device = ""
    for function in graph_def.library.function:
        for node in function.node_def:
            node.device = ""
    return graph_def


def _import_with_feeds(graph_def, feeds):
    """The pipeline's dataset tensor, imported into the current graph with its large constants
    as placeholders that ``feeds`` feeds; None when it has no large constant."""
    taken = feeds.take_constants(graph_def)
    if not taken:
        return None
    # The definition ends with a _Retval node (a function's return), which a graph cannot hold.
    index, retval = next((i, node) for i, node in enumerate(graph_def.node)
                         if node.op == "_Retval")
    del graph_def.node[index]
    output = retval.input[0] if ":" in retval.input[0] else retval.input[0] + ":0"
    tensors = tfv1.import_graph_def(graph_def, return_elements=[f"{name}:0" for name in taken]
                                    + [output], name="eager_dataset")
    for placeholder, array in zip(tensors, taken.values()):
        feeds.add(placeholder, array)
    return tensors[-1]


class SerializedDataset:
    """The definition of an eagerly built dataset, ready to be rebuilt in any graph.

    Args:
        dataset (tf.data.Dataset): a dataset built eagerly.
        owner (str): who asks, for error messages (``DatasetInput``, ``InferenceRunner`` ...).
        unknown_stage (str): why tfloop does not make the pipeline's stages again itself (see
            :class:`~tfloop.input.eager_pipeline.UnknownStage`), for the warning about a large
            definition.

    Raises:
        ValueError: TensorFlow cannot serialize the dataset; the message says to pass the function
            that builds it instead.

    Example:
        >>> serialized = SerializedDataset(tf.data.Dataset.range(10).batch(2))
        >>> with tf.Graph().as_default():
        ...     dataset = serialized.build()
    """

    def __init__(self, dataset, owner="as_graph_dataset", unknown_stage=None):
        self.dataset = dataset
        self.element_spec = dataset.element_spec
        self.owner = owner
        self.unknown_stage = unknown_stage
        self._graph_def = self._serialize()

    def _serialize(self):
        with _eager_mode():
            try:
                serialized = tf.raw_ops.DatasetToGraphV2(
                    input_dataset=tf.data.experimental.to_variant(self.dataset),
                    external_state_policy=_IGNORE_EXTERNAL_STATE).numpy()
            except tf.errors.OpError as e:
                reason = (e.message or type(e).__name__).strip().splitlines()[0]
                raise ValueError(
                    f"{self.owner} cannot bring this eagerly built tf.data.Dataset into tfloop's "
                    f"graph, because TensorFlow cannot serialize it ({reason}): pass the function "
                    f"that builds the dataset instead, e.g. {self.owner}(make_dataset).") from None
        if len(serialized) >= LARGE_DEFINITION_BYTES:
            why = "" if self.unknown_stage is None else (
                f": tfloop brings in the arrays of an eager pipeline without this copy only when "
                f"it knows every stage, and this one has {self.unknown_stage}")
            logger.warning(
                f"{self.owner}: this eagerly built tf.data.Dataset holds "
                f"{len(serialized) / 2 ** 20:.0f} MB of data, which TensorFlow copies several "
                f"times to bring it into the training graph (about 1 s per 100 MB){why}. Pass the "
                f"function that builds it instead, and its arrays are fed without a copy: e.g. "
                f"data=lambda: tf.data.Dataset.from_tensor_slices((x, y)).batch(32).")
        return _without_devices(serialized)

    def build(self, feeds=None):
        """The same pipeline in the current default graph, as a ``tf.data.Dataset``.

        Args:
            feeds (ArrayFeeds): when given, the pipeline's large constants become placeholders
                that ``feeds`` feeds (see :mod:`tfloop.input.fed_arrays`); its iterator must then
                be initialized with ``feeds.feed_dict``.
        """
        graph_def, self._graph_def = self._graph_def or self._serialize(), None
        keep_with_graph(tfv1.get_default_graph(), self.dataset)
        variant = None if feeds is None else _import_with_feeds(graph_def, feeds)
        if variant is None:
            with tf.name_scope("eager_dataset"):
                # GuaranteeConst keeps TensorFlow from constant-folding the dataset op: a folded
                # dataset becomes a variant constant, which the session cannot load.
                definition = tf.raw_ops.GuaranteeConst(
                    input=tf.constant(graph_def.SerializeToString()))
                variant = tf.raw_ops.DatasetFromGraph(graph_def=definition)
        return tf.data.experimental.from_variant(variant, self.element_spec)


def eager_definition(dataset, owner="as_graph_dataset"):
    """What tfloop keeps of an eagerly built dataset to make it again in any graph (both have
    ``build(feeds)``): its stages, when tfloop knows them all (an
    :class:`~tfloop.input.eager_pipeline.EagerPipeline`), else its serialized definition (a
    :class:`SerializedDataset`).

    Raises:
        ValueError: the dataset has a stage tfloop does not know, and TensorFlow cannot serialize
            it.

    Example:
        >>> definition = eager_definition(tf.data.Dataset.from_tensor_slices(x).batch(32))
        >>> with tf.Graph().as_default():
        ...     dataset = definition.build(ArrayFeeds())
    """
    try:
        return EagerPipeline(dataset)
    except UnknownStage as unknown:
        return SerializedDataset(dataset, owner, unknown_stage=str(unknown))


def as_graph_dataset(dataset, owner="as_graph_dataset", feeds=None):
    """The ``tf.data.Dataset`` that ``dataset`` stands for, in the current default graph.

    Args:
        dataset: a ``tf.data.Dataset`` built eagerly (it is rebuilt in this graph), a dataset
            built in this graph (returned as is), or a function that returns either, called with
            this graph as the default graph.
        owner (str): who asks, for error messages.
        feeds (ArrayFeeds): when given, the large arrays of the pipeline are fed rather than
            stored in the graph (see :mod:`tfloop.input.fed_arrays`): initialize its iterator
            with ``feeds.feed_dict``.

    Returns:
        tf.data.Dataset: a dataset of this graph with the same ``element_spec``. Iterate a rebuilt
        eager dataset with ``make_initializable_iterator``: a one-shot iterator cannot capture
        the (stateful) op that holds its definition.

    Raises:
        TypeError: ``dataset`` is neither a dataset nor a function returning one.
        ValueError: the dataset belongs to another graph, or cannot be serialized.

    Example:
        >>> ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100).batch(32)
        >>> with tf.Graph().as_default():
        ...     iterator = tf.compat.v1.data.make_initializable_iterator(as_graph_dataset(ds))
    """
    if isinstance(dataset, (SerializedDataset, EagerPipeline)):
        return dataset.build(feeds)
    if not isinstance(dataset, tf.data.Dataset):
        if not callable(dataset):
            raise TypeError(f"{owner} needs a tf.data.Dataset or a function that builds one, got "
                            f"{dataset!r}.")
        with contextlib.nullcontext() if feeds is None else feeds.capture():
            made = dataset()
        if not isinstance(made, tf.data.Dataset):
            raise TypeError(f"The function given to {owner} returned {made!r}, not a "
                            f"tf.data.Dataset.")
        dataset = made
    if built_eagerly(dataset):
        return eager_definition(dataset, owner).build(feeds)
    if dataset._variant_tensor.graph is not tfv1.get_default_graph():
        raise ValueError(
            f"{owner} got a tf.data.Dataset built in another graph than tfloop's: build it "
            f"eagerly (outside any graph), or pass the function that builds it, e.g. "
            f"{owner}(make_dataset).")
    return dataset
