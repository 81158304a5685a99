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

Data that yields nothing ends the marked pipeline at once: the first step raises
``tf.errors.OutOfRangeError``, which the trainer turns into an error naming the pipeline.
"""
import re

from tfloop.compat import tf

__all__ = ["mark_pass_ends", "held_element", "describe_pipeline", "in_whole_groups"]

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


def mark_pass_ends(dataset, batches_per_step=1):
    """``dataset`` repeated forever, each element held in a TensorFlow optional and paired with
    a bool scalar: whether it is the last element of its pass that a training step takes. Read
    the element with :func:`held_element`.

    Each pass is a new iteration of ``dataset`` (a ``shuffle`` reshuffles as it says). With
    ``batches_per_step`` = n > 1 (a step of n towers, one element each), each pass is cut to a
    multiple of n elements, so that no step takes elements of two passes. Each element is held
    until the next one is read: the next one is the first of its pass (its index in the pass is
    0) exactly when the held one ended a pass.

    The stages are ``enumerate``, ``repeat``, one ``scan`` and ``skip``: one function call per
    element, and never a ``map`` (tf.data makes a ``map`` parallel, and a parallel map after a
    ``filter`` makes a restored iterator reshuffle the later passes differently, TensorFlow
    2.21). The element is taken out of its optional in the training step itself. An empty dataset
    ends the repeated one at once (the training step's ``OutOfRangeError``); a pass that is
    empty after others were not never ends (tf.data's ``repeat`` looks for the next element
    forever).

    Args:
        dataset (tf.data.Dataset): a finite dataset, in the graph being built.
        batches_per_step (int): the elements one training step takes.

    Returns:
        tf.data.Dataset: elements ``(held, last)``.

    Example:
        >>> marked = mark_pass_ends(tf.data.Dataset.range(3))
        >>> held, last = tf.compat.v1.data.make_initializable_iterator(marked).get_next()
        >>> element = held_element(held, tf.data.Dataset.range(3).element_spec)
        >>> # (0, False), (1, False), (2, True), (0, False), ...
    """
    grouped = _in_groups(dataset, batches_per_step)

    def hold(held, numbered):
        index, element = numbered
        current = tf.raw_ops.OptionalFromValue(
            components=tf.nest.flatten(element, expand_composites=True))
        # Emit the element held so far, and whether this one starts a new pass.
        return current, (held, tf.equal(index, 0))

    # The first pair holds nothing yet.
    return grouped.enumerate().repeat().scan(tf.raw_ops.OptionalNone(), hold).skip(1)


def held_element(held, spec):
    """The element that an optional of :func:`mark_pass_ends` holds, with the structure of
    ``spec`` (the element_spec of the dataset it marked)."""
    components = tf.nest.flatten(spec, expand_composites=True)
    flat = tf.raw_ops.OptionalGetValue(optional=held, output_types=[c.dtype for c in components],
                                       output_shapes=[c.shape for c in components])
    return tf.nest.pack_sequence_as(spec, flat, expand_composites=True)


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
