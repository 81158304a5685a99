"""tf.data's static rewrite of a pipeline over large fed arrays: kept only where it does something.

When an iterator is initialized, tf.data first rewrites its pipeline with its default static
optimizations (a ``map`` fused into the ``batch`` after it or run in parallel, no-op stages
dropped, ``shuffle`` and ``repeat`` fused, batches copied in parallel, a ``prefetch`` added at the
end). To rewrite, it rebuilds the pipeline's graph with a stand-in tensor of full size for every
array the pipeline holds: about 1 ns per byte at every initialization, 0.35 s for 400 MB on a
2-core machine, whether or not any optimization applies.

For a pipeline over fed arrays (:mod:`tfloop.input.fed_arrays`) of at least
:data:`SKIP_FROM_BYTES` whose stages are all plain data movement (slices, ``batch``, ``shuffle``
not right before ``repeat``, ``repeat``, ``take``, ``skip``, ``cache``, ``prefetch`` ...), the
rewrite would only add a final ``prefetch`` and copy each batch's rows in parallel:
:func:`without_static_rewrite` adds that prefetch itself and turns the rewrite off (batches are
then copied by one thread). A pipeline with a ``map``, ``filter``, ``interleave`` or any other
stage, or whose options name an optimization, is left to tf.data.
"""
from tensorflow.core.framework import dataset_options_pb2

from tfloop.compat import tf

__all__ = ["SKIP_FROM_BYTES", "without_static_rewrite"]

SKIP_FROM_BYTES = 16 << 20

# Stages no default optimization changes, the batch's parallel copy and fusions with a neighbour
# aside (see _fusable).
_PLAIN_STAGES = frozenset({
    "TensorSliceDataset", "TensorDataset", "RangeDataset", "BatchDatasetV2",
    "PaddedBatchDatasetV2", "ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3",
    "RepeatDataset", "PrefetchDataset", "TakeDataset", "SkipDataset", "ZipDataset",
    "ConcatenateDataset", "ShardDataset", "OptionsDataset",
    # cache(), in memory or to a file: built in a graph, CacheDataset; eagerly, CacheDatasetV2.
    "CacheDataset", "CacheDatasetV2",
})
_SHUFFLES = frozenset({"ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3"})


def _stages(dataset):
    """The ops of the pipeline that makes ``dataset``, last stage first."""
    found, pending, seen = [], [dataset._variant_tensor.op], set()
    while pending:
        op = pending.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        found.append(op)
        pending.extend(t.op for t in op.inputs if t.dtype == tf.variant)
    return found


def _fusable(stages):
    """Whether a ``shuffle`` feeds a ``repeat`` (tf.data fuses the two)."""
    return any(op.type == "RepeatDataset" and op.inputs[0].op.type in _SHUFFLES
               for op in stages)


def _optimizations_chosen(stages):
    """Whether options set on the pipeline name any optimization (then tf.data decides)."""
    for op in stages:
        if op.type == "OptionsDataset":
            options = dataset_options_pb2.Options.FromString(op.get_attr("serialized_options"))
            if options.optimization_options.ListFields():
                return True
    return False


def without_static_rewrite(dataset, fed_bytes):
    """``dataset``, with its final ``prefetch`` and tf.data's static rewrite off when the rewrite
    would do nothing else and ``fed_bytes`` (the arrays fed to it) make it costly; else
    ``dataset`` as is.

    Example:
        >>> ds = without_static_rewrite(ds.repeat(), feeds.nbytes())
    """
    if fed_bytes < SKIP_FROM_BYTES:
        return dataset
    stages = _stages(dataset)
    if (any(op.type not in _PLAIN_STAGES for op in stages) or _fusable(stages)
            or _optimizations_chosen(stages)):
        return dataset
    if stages[0].type != "PrefetchDataset":
        dataset = dataset.prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return dataset.with_options(options)
