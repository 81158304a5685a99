"""Epochs that are passes over data of unknown length: a tf.data pipeline that says where each
pass ends.

A pipeline whose length TensorFlow cannot know (TFRecord files, a ``filter``, an ``interleave``
over files, the tf.data service) trains with each epoch one pass over it. The training step must
learn where a pass ends without a step failing: :func:`mark_pass_ends` repeats the pipeline (so
that every pass reshuffles as the pipeline says, and one iterator, whose position can be saved,
runs through all of them) and pairs each element with whether it is the last of its pass, seen
one element ahead. The flag is fetched with the step that takes that element, and the epoch ends
after it. Python data (``QueueInput``) gets the same flags from :func:`in_whole_groups`, in its
loader thread.

A pass that yields nothing raises an error at the step that would take its first element
(:data:`EMPTY_PASS`), not a loop that never ends.
"""
import re

from tfloop.compat import tf

__all__ = ["EMPTY_PASS", "mark_pass_ends", "describe_pipeline", "in_whole_groups"]

# In the error a pass without an element raises in the training step.
EMPTY_PASS = "tfloop: a pass over the input pipeline yielded no batch"

_STAGE_NAMES = {"TensorSlice": "from_tensor_slices", "Tensor": "from_tensors", "Range": "range",
                "ParallelMap": "map", "ParallelInterleave": "interleave", "TFRecord":
                "TFRecordDataset", "TextLine": "TextLineDataset", "FixedLengthRecord":
                "FixedLengthRecordDataset", "DataService": "distribute"}


def _stage_name(dataset):
    name = re.sub(r"^_+|(Dataset)?(V\d)?$", "", type(dataset).__name__) or type(dataset).__name__
    if name in _STAGE_NAMES:
        return _STAGE_NAMES[name]
    return re.sub(r"(?<!^)(?=[A-Z][a-z])", "_", name).lower()


def describe_pipeline(dataset):
    """The stages of ``dataset``'s pipeline, first to last, along its first inputs (e.g.
    ``"from_tensor_slices > TFRecordDataset > map > filter > batch"``), to name it in messages.

    Example:
        >>> describe_pipeline(tf.data.Dataset.range(9).filter(lambda i: i > 2).batch(2))
        'range > filter > batch'
    """
    stages = []
    while dataset is not None and len(stages) < 50:
        stages.append(_stage_name(dataset))
        inputs = dataset._inputs()
        dataset = inputs[0] if inputs else None
    return " > ".join(reversed(stages))


def _in_groups(dataset, size):
    """The elements of ``dataset`` in whole groups of ``size`` (a last, smaller group is left
    out), one by one: each training step takes one group, one element per tower."""
    if size == 1:
        return dataset
    spec = dataset.element_spec

    def elements(*window):
        # A window is the element's structure with a dataset of ``size`` values at each leaf.
        return tf.data.Dataset.zip(tf.nest.pack_sequence_as(spec, tf.nest.flatten(window)))

    return dataset.window(size, shift=size, drop_remainder=True).flat_map(elements)


def _one_pass_marked(dataset):
    """One pass over ``dataset``: ``(element, last)`` for each element, ``last`` true for its
    final one. Each element is held until the next one (or the end) is seen, as a TensorFlow
    optional; an empty pass raises :data:`EMPTY_PASS` instead of ending."""
    spec = dataset.element_spec
    flat_specs = tf.nest.flatten(spec)
    types = [s.dtype for s in flat_specs]
    shapes = [s.shape for s in flat_specs]

    def wrap(*element):
        return tf.raw_ops.OptionalFromValue(components=tf.nest.flatten(element))

    def has_value(optional):
        return tf.raw_ops.OptionalHasValue(optional=optional)

    def hold(held, current):
        # Emit the element held so far with whether another one followed it; hold this one.
        return current, (held, has_value(current))

    def unwrap(held, followed):
        check = tf.debugging.Assert(has_value(held), [EMPTY_PASS])
        with tf.control_dependencies([check]):
            flat = tf.raw_ops.OptionalGetValue(optional=held, output_types=types,
                                               output_shapes=shapes)
        return tf.nest.pack_sequence_as(spec, flat), tf.logical_not(followed)

    optionals = dataset.map(wrap).concatenate(
        tf.data.Dataset.from_tensors(tf.raw_ops.OptionalNone()))
    pairs = optionals.scan(tf.raw_ops.OptionalNone(), hold)
    # The first pair of a pass holds nothing; it is kept only when nothing followed (an empty
    # pass), for unwrap to raise.
    pairs = pairs.filter(lambda held, followed: tf.logical_or(has_value(held),
                                                              tf.logical_not(followed)))
    return pairs.map(unwrap)


def mark_pass_ends(dataset, batches_per_step=1):
    """``dataset`` repeated forever, each element paired with a bool scalar: whether it is the
    last element of its pass that a training step takes.

    Each pass is a new iteration of ``dataset`` (a ``shuffle`` reshuffles as it says). With
    ``batches_per_step`` = n > 1 (a step of n towers, one element each), each pass is cut to a
    multiple of n elements, so that no step takes elements of two passes.

    Args:
        dataset (tf.data.Dataset): a finite dataset, in the graph being built.
        batches_per_step (int): the elements one training step takes.

    Returns:
        tf.data.Dataset: elements ``(element, last)``.

    Example:
        >>> marked = mark_pass_ends(tf.data.Dataset.range(3))
        >>> # (0, False), (1, False), (2, True), (0, False), ...
    """
    return _one_pass_marked(_in_groups(dataset, batches_per_step)).repeat()


def in_whole_groups(items, size, pass_end):
    """The items of passes over Python data in whole groups of ``size`` (the datapoints of one
    training step), each with whether it ends its pass.

    Args:
        items: ``(pass_num, index, item)`` in order, with ``item`` = ``pass_end`` after each pass
            (``iter_datapoints(..., mark_ends=True)``).
        size (int): the datapoints one step takes; a pass's last, incomplete group is left out.
        pass_end: the marker of a pass's end.

    Yields:
        ``(pass_num, index, (item, last))``, ``last`` true for the final item of a pass. A group
        is yielded once the next group of its pass is complete or the pass ended.

    Example:
        >>> marked = [(0, 0, "a"), (0, 1, "b"), (0, 2, "c"), (0, 3, PASS_END)]
        >>> [entry[2] for entry in in_whole_groups(marked, 1, PASS_END)]
        [('a', False), ('b', False), ('c', True)]
    """
    pending, current = [], []
    for pass_num, index, item in items:
        if item is pass_end:
            for i, (p, j, held) in enumerate(pending):
                yield p, j, (held, i == len(pending) - 1)
            pending, current = [], []
            continue
        current.append((pass_num, index, item))
        if len(current) == size:
            for p, j, held in pending:
                yield p, j, (held, False)
            pending, current = current, []
