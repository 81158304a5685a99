"""An eagerly built pipeline whose stages tfloop knows, made again in the training graph.

Serializing an eager dataset's definition (:class:`~tfloop.input.graph_dataset.SerializedDataset`)
copies the data of its ``from_tensor_slices`` several times: 2.5 to 4.8 s before the first step
with 400 MB of arrays. A pipeline over in-memory arrays needs no serializing: for each stage of an
eager dataset, ``tf.data`` keeps a Python object holding the stage's input datasets and arguments
(the tensors of ``from_tensor_slices``, the seeds of a ``shuffle``, the traced function of a
``map``). :class:`EagerPipeline` reads them and makes the same dataset ops again in the current
graph, with the same arguments, functions, seeds and names, so the pipeline is the same one: same
elements in the same order, same ``element_spec``, same iterator state. The tensors of
``from_tensor_slices`` and ``from_tensors``, and those a function captures, are read without a
copy, and the large ones are fed as in the function form (:mod:`tfloop.input.fed_arrays`).

The stages it knows: ``from_tensor_slices``, ``from_tensors``, ``range``; ``batch``,
``shuffle``, ``repeat``, ``take``, ``skip``, ``shard``, ``cache`` (in memory or to a file),
``prefetch``, ``zip``, ``concatenate``, ``with_options``; ``map`` and ``filter`` of a function
that captures tensors (not a variable or a table). Any other stage raises :class:`UnknownStage`,
and the dataset is serialized instead.

A stage is known by its class, a class of TensorFlow's ``tensorflow.python.data.ops`` modules,
and read through the attributes TensorFlow 2.21 gives it; a stage without them is unknown too.
"""
import collections
import weakref

import numpy as np
from tensorflow.core.framework import attr_value_pb2

from tfloop.compat import tf, tfv1

__all__ = ["EagerPipeline", "UnknownStage", "keep_with_graph"]

_TF_DATA_OPS = "tensorflow.python.data.ops."
# Resources that eager code hands a dataset op as a dummy, the op making its own: the seed
# generator of a shuffle, the memory of a cache.
_OWN_RESOURCES = {"ShuffleDatasetV3": ("seed_generator", "DummySeedGenerator"),
                  "CacheDatasetV2": ("cache", "DummyMemoryCache")}

# graph -> the eager datasets made again in it, kept alive with the graph for the Python functions
# (py_function, numpy_function, from_generator) that its ops call back.
_KEPT = weakref.WeakKeyDictionary()

_Stage = collections.namedtuple("_Stage", ["make", "inputs"])


def keep_with_graph(graph, dataset):
    """Keep ``dataset`` alive as long as ``graph``, whose ops may call its Python functions."""
    _KEPT.setdefault(graph, []).append(dataset)


class UnknownStage(Exception):
    """A stage of an eager pipeline that :class:`EagerPipeline` does not make again; the message
    names it ("its _InterleaveDataset stage ...")."""


def _value(tensor):
    """The value of an eager tensor a stage holds, as numpy: for a number or a boolean, a view of
    the tensor's own buffer (no copy, and aligned as TensorFlow aligns its tensors)."""
    if tensor.dtype != tf.string:
        try:
            view = np.asarray(memoryview(tensor))
        except (TypeError, ValueError, BufferError):
            view = None
        if view is not None and view.dtype == tensor.dtype.as_numpy_dtype:
            return view
    return tensor.numpy()


def _data(tensors, stage):
    """The values of the tensors of ``from_tensor_slices``, ``from_tensors`` or a function's
    captures; a resource or a variant among them (a variable, a table, ragged or sparse data, a
    dataset) is not an array."""
    if any(t.dtype in (tf.resource, tf.variant) for t in tensors):
        raise UnknownStage(f"its {type(stage).__name__} stage, which holds a variable, a table, "
                           f"ragged or sparse data, a dataset or another resource")
    return [_value(t) for t in tensors]


def _argument(value):
    """A stage's argument as the op takes it: an eager tensor's value, or a Python value as is."""
    return _value(value) if isinstance(value, tf.Tensor) else value


def _graph_tensors(arrays, sliced, feeds):
    """``arrays`` in the current graph: the large ones as placeholders that ``feeds`` feeds (see
    :meth:`~tfloop.input.fed_arrays.ArrayFeeds.substitute`), the others as constants."""
    given = tuple(arrays) if feeds is None else feeds.substitute(tuple(arrays), sliced)
    return [value if isinstance(value, tf.Tensor) else tf.constant(value) for value in given]


def _wired(inputs_as, inputs):
    """The op's dataset arguments: ``inputs_as`` names them in the order of the stage's
    ``_inputs()``; ``input_datasets`` (a zip's) takes them all, as a list."""
    if inputs_as == ("input_datasets",):
        return {"input_datasets": list(inputs)}
    return dict(zip(inputs_as, inputs))


def _own_resources(op):
    if op not in _OWN_RESOURCES:
        return {}
    name, dummy = _OWN_RESOURCES[op]
    return {name: getattr(tf.raw_ops, dummy)()}


def _stage(op, inputs_as=("input_dataset",), **attributes):
    """The reader of a stage made by ``op``: ``attributes`` maps the op's arguments to the stage's
    attributes holding them (or to a function of the stage giving them)."""
    def read(dataset):
        values = {name: _argument(attribute(dataset) if callable(attribute)
                                  else getattr(dataset, attribute))
                  for name, attribute in attributes.items()}
        if op == "PrefetchDataset":     # as eager code sets it, from the buffer size given
            values["legacy_autotune"] = bool(values["buffer_size"] == tf.data.AUTOTUNE)
        common = dataset._common_args

        def make(inputs, feeds, **more):
            return getattr(tf.raw_ops, op)(**_wired(inputs_as, inputs), **values, **more,
                                           **_own_resources(op), **common)
        return make
    return read


def _function_stage(op, wrapper, function_as, **attributes):
    """The reader of a stage applying a traced function (``map``, ``filter``): the function is the
    one traced eagerly; the tensors it captures are brought in as data."""
    read_others = _stage(op, **attributes)

    def read(dataset):
        function = getattr(dataset, wrapper).function
        if not isinstance(function, tf.types.experimental.ConcreteFunction):
            raise UnknownStage(f"its {type(dataset).__name__} stage, whose function is a legacy "
                               f"one")
        captured = _data(function.captured_inputs, dataset)
        make_others = read_others(dataset)

        def make(inputs, feeds):
            # Named as eager code names it (the function's attributes are in its definition).
            function.add_to_graph(tfv1.get_default_graph())
            named = attr_value_pb2.NameAttrList(name=function.name)
            return make_others(inputs, feeds, **{function_as: named},
                               other_arguments=_graph_tensors(captured, False, feeds))
        return make
    return read


def _source(op, sliced):
    """The reader of ``from_tensor_slices`` (``sliced``) or ``from_tensors``."""
    def read(dataset):
        arrays = _data(dataset._tensors, dataset)
        if sliced and len(arrays) == 1 and arrays[0].dtype == object:
            # Dataset.list_files slices one string tensor, telling the op that it holds file names
            # (is_files), which the stage does not keep.
            raise UnknownStage(f"its {type(dataset).__name__} stage of strings alone (file names "
                               f"of list_files?)")
        common = dataset._common_args

        def make(inputs, feeds):
            return getattr(tf.raw_ops, op)(components=_graph_tensors(arrays, sliced, feeds),
                                           output_shapes=common["output_shapes"],
                                           metadata=common["metadata"])
        return make
    return read


def _serialized_options(dataset):
    # The options of this stage merged with its inputs' (tf.data merges those of all stages
    # anyway), as ``options()`` gives them, which warns when called while a graph is built.
    return dataset._options_attr._to_proto().SerializeToString()


# Each known stage: its class (module in tensorflow.python.data.ops, name) and its reader. The
# arguments are those eager code passes to the op (tensorflow/python/data/ops/*.py, TF 2.21).
_READERS = {
    "from_tensor_slices_op._TensorSliceDataset": _source("TensorSliceDataset", sliced=True),
    "from_tensors_op._TensorDataset": _source("TensorDataset", sliced=False),
    "range_op._RangeDataset": _stage("RangeDataset", (), start="_start", stop="_stop",
                                     step="_step"),
    "batch_op._BatchDataset": _stage("BatchDatasetV2", batch_size="_batch_size",
                                     drop_remainder="_drop_remainder"),
    "batch_op._ParallelBatchDataset": _stage(
        "ParallelBatchDataset", batch_size="_batch_size", drop_remainder="_drop_remainder",
        num_parallel_calls="_num_parallel_calls", deterministic="_deterministic"),
    "shuffle_op._ShuffleDataset": _stage(
        "ShuffleDatasetV3", buffer_size="_buffer_size", seed="_seed", seed2="_seed2",
        reshuffle_each_iteration="_reshuffle_each_iteration"),
    "repeat_op._RepeatDataset": _stage("RepeatDataset", count="_count"),
    "take_op._TakeDataset": _stage("TakeDataset", count="_count"),
    "skip_op._SkipDataset": _stage("SkipDataset", count="_count"),
    "shard_op._ShardDataset": _stage("ShardDataset", num_shards="_num_shards", index="_index"),
    "cache_op.CacheDataset": _stage("CacheDatasetV2", filename="_filename"),
    "prefetch_op._PrefetchDataset": _stage("PrefetchDataset", buffer_size="_buffer_size"),
    "zip_op._ZipDataset": _stage("ZipDataset", ("input_datasets",)),
    "concatenate_op._ConcatenateDataset": _stage("ConcatenateDataset",
                                                 ("input_dataset", "another_dataset")),
    "dataset_ops._OptionsDataset": _stage("OptionsDataset",
                                          serialized_options=_serialized_options),
    "map_op._MapDataset": _function_stage(
        "MapDataset", "_map_func", "f", use_inter_op_parallelism="_use_inter_op_parallelism",
        preserve_cardinality="_preserve_cardinality", force_synchronous="_force_synchronous"),
    "map_op._ParallelMapDataset": _function_stage(
        "ParallelMapDatasetV2", "_map_func", "f", num_parallel_calls="_num_parallel_calls",
        deterministic="_deterministic", use_inter_op_parallelism="_use_inter_op_parallelism",
        preserve_cardinality="_preserve_cardinality",
        use_unbounded_threadpool="_use_unbounded_threadpool"),
    "filter_op._FilterDataset": _function_stage("FilterDataset", "_predicate", "predicate"),
}


def _plan(dataset, planned):
    """The stage that makes ``dataset`` and, through its inputs, the whole pipeline (a dataset
    that is the input of two stages is one stage)."""
    if id(dataset) in planned:
        return planned[id(dataset)]
    kind = type(dataset)
    read = None
    if kind.__module__.startswith(_TF_DATA_OPS):
        read = _READERS.get(kind.__module__.removeprefix(_TF_DATA_OPS) + "." + kind.__qualname__)
    if read is None:
        raise UnknownStage(f"its {kind.__name__} stage, which tfloop does not rebuild")
    try:
        stage = _Stage(read(dataset), [_plan(given, planned) for given in dataset._inputs()])
    except AttributeError as e:
        raise UnknownStage(f"its {kind.__name__} stage, whose attributes are not those of "
                           f"TensorFlow 2.21 ({e})") from None
    planned[id(dataset)] = stage
    return stage


def _make(stage, feeds, made):
    if id(stage) not in made:
        made[id(stage)] = stage.make([_make(given, feeds, made) for given in stage.inputs], feeds)
    return made[id(stage)]


class EagerPipeline:
    """An eagerly built pipeline whose stages tfloop knows, ready to be made again in any graph.

    Args:
        dataset (tf.data.Dataset): a dataset built eagerly.

    Raises:
        UnknownStage: the pipeline has a stage that tfloop does not make again (see the module).

    Example:
        >>> pipeline = EagerPipeline(tf.data.Dataset.from_tensor_slices((x, y)).batch(32))
        >>> with tf.Graph().as_default():
        ...     feeds = ArrayFeeds()
        ...     iterator = tf.compat.v1.data.make_initializable_iterator(pipeline.build(feeds))
    """

    def __init__(self, dataset):
        self.dataset = dataset
        self.element_spec = dataset.element_spec
        self._last = _plan(dataset, {})

    def build(self, feeds=None):
        """The same pipeline in the current default graph, as a ``tf.data.Dataset``.

        Args:
            feeds (ArrayFeeds): when given, the pipeline's large arrays become placeholders that
                ``feeds`` feeds; its iterator must then be initialized with ``feeds.feed_dict``.
                Without it, they are constants of the graph.
        """
        keep_with_graph(tfv1.get_default_graph(), self.dataset)
        with tf.name_scope("eager_dataset"):
            variant = _make(self._last, feeds, {})
        return tf.data.experimental.from_variant(variant, self.element_spec)
