"""mark_pass_ends, in_whole_groups and describe_pipeline: the ends of passes over data of unknown
length, marked in a tf.data pipeline and in Python data, checked element by element."""
import numpy as np
import pytest

from tfloop.compat import tf, tfv1
from tfloop.input.loader import PASS_END, iter_datapoints
from tfloop.input.passes import describe_pipeline, held_element, in_whole_groups, mark_pass_ends


def marked(dataset, batches_per_step=1):
    return mark_pass_ends(dataset, batches_per_step), dataset.element_spec


def read(dataset, count, state_at=None):
    """The first ``count`` elements ``(element, last)`` of ``dataset``, a marked dataset built in
    a graph by ``dataset()`` (returning it and the element_spec it marked), as numpy values; with
    ``state_at``, also the elements read after restoring the iterator's position saved after
    element ``state_at`` (as many as were read after it)."""
    with tf.Graph().as_default():
        marked, spec = dataset()
        iterator = tfv1.data.make_initializable_iterator(marked)
        held, last = iterator.get_next()
        element = (held_element(held, spec), last)
        resource = iterator._iterator_resource
        save = tf.io.serialize_tensor(tf.raw_ops.SerializeIterator(
            resource_handle=resource, external_state_policy=2))
        saved = tfv1.placeholder(tf.string, [])
        restore = tf.raw_ops.DeserializeIterator(resource_handle=resource,
                                                 serialized=tf.io.parse_tensor(saved, tf.variant))
        with tfv1.Session() as sess:
            sess.run(iterator.initializer)
            values, blob = [], None
            for i in range(count):
                values.append(tf.nest.map_structure(np.asarray, sess.run(element)))
                if i == state_at:
                    blob = sess.run(save)
            if state_at is None:
                return values
            sess.run(iterator.initializer)
            sess.run(restore, {saved: blob})
            return values, [tf.nest.map_structure(np.asarray, sess.run(element))
                            for _ in range(count - state_at - 1)]


def test_each_element_says_whether_it_ends_its_pass_and_every_pass_is_reshuffled():
    def dataset():
        tfv1.set_random_seed(3)
        return marked(tf.data.Dataset.range(5).shuffle(5).filter(lambda i: i < 4))
    values = read(dataset, 12)
    passes = [[int(v) for v, _ in values[i:i + 4]] for i in (0, 4, 8)]
    assert [bool(last) for _, last in values] == [False, False, False, True] * 3
    assert all(sorted(p) == [0, 1, 2, 3] for p in passes)
    assert len({tuple(p) for p in passes}) > 1        # a new shuffle order in some pass


def _positive(i):
    return i > 0


@pytest.mark.parametrize("state_at", [1, 3, 4])   # within a pass, at its end, at the next start
def test_a_restored_iterator_continues_the_pass_and_the_passes_after_it_exactly(state_at):
    def dataset():
        tfv1.set_random_seed(3)
        return marked(tf.data.Dataset.range(5).shuffle(5).filter(_positive))
    values, restored = read(dataset, 14, state_at=state_at)
    as_list = [(int(v), bool(last)) for v, last in values[state_at + 1:]]
    assert [(int(v), bool(last)) for v, last in restored] == as_list


def _tensor(i):
    return i


def _pair(i):
    return i, tf.fill([i], 1.0)


def _one_tuple(i):
    return (i,)


def _nested_dict(i):
    return {"a": i, "b": (i, (i, i))}


@pytest.mark.parametrize("make", [_tensor, _pair, _one_tuple, _nested_dict])
def test_the_elements_keep_their_structure(make):

    def dataset():
        return marked(tf.data.Dataset.range(3).filter(lambda i: i >= 0).map(make), 2)
    base = tf.data.Dataset.range(3).map(make)
    with tf.Graph().as_default():
        marked_dataset, spec = dataset()
        assert spec == base.element_spec
        assert marked_dataset.element_spec == (tf.TensorSpec([], tf.variant),
                                               tf.TensorSpec([], tf.bool))
    values = read(dataset, 4)
    expected = [make(i) for i in (0, 1, 0, 1)]           # passes cut to 2 elements, one step
    for (element, last), want, want_last in zip(values, expected, [False, True, False, True]):
        tf.nest.assert_same_structure(element, want)
        for got, value in zip(tf.nest.flatten(element), tf.nest.flatten(want)):
            np.testing.assert_array_equal(got, np.asarray(value))
        assert bool(last) is want_last


def test_each_pass_is_cut_to_whole_steps_of_batches_per_step_elements():
    def dataset():
        return marked(tf.data.Dataset.range(7).filter(lambda i: i >= 0), 3)
    values = read(dataset, 12)
    assert [(int(v), bool(last)) for v, last in values] == [
        (0, False), (1, False), (2, False), (3, False), (4, False), (5, True)] * 2


def test_empty_data_ends_at_once_instead_of_looking_for_a_pass_forever():
    def dataset():
        return marked(tf.data.Dataset.range(3).filter(lambda i: i > 5))
    with pytest.raises(tf.errors.OutOfRangeError):
        read(dataset, 1)


def test_data_shorter_than_one_step_is_empty():
    def dataset():
        return marked(tf.data.Dataset.range(3).filter(lambda i: i < 2), 3)
    with pytest.raises(tf.errors.OutOfRangeError):
        read(dataset, 1)


def test_python_data_is_cut_into_whole_groups_each_flagged_at_its_pass_end():
    passes = [["a", "b", "c", "d", "e"], ["f", "g"], ["h", "i", "j", "k"]]

    class Data:
        def __init__(self):
            self.calls = 0

        def __iter__(self):
            self.calls += 1
            return iter(passes[(self.calls - 1) % 3])

    marked = iter_datapoints(Data(), "test", mark_ends=True)
    first = [next(marked) for _ in range(16)]
    assert first[5] == (0, 5, PASS_END) and first[8] == (1, 2, PASS_END)
    grouped = list(in_whole_groups(first, 2, PASS_END))
    assert grouped == [(0, 0, ("a", False)), (0, 1, ("b", False)), (0, 2, ("c", False)),
                       (0, 3, ("d", True)), (1, 0, ("f", False)), (1, 1, ("g", True)),
                       (2, 0, ("h", False)), (2, 1, ("i", False)), (2, 2, ("j", False)),
                       (2, 3, ("k", True))]


def test_a_group_waits_for_the_next_group_or_the_pass_end():
    grouped = in_whole_groups(iter([(0, 0, "a"), (0, 1, "b"), (0, 2, "c")]), 1, PASS_END)
    assert next(grouped) == (0, 0, ("a", False))      # "b" completes the next group
    assert next(grouped) == (0, 1, ("b", False))
    assert list(grouped) == []                        # "c" waits for "d" or the pass end


def test_the_pipeline_is_described_by_its_stages():
    files = tf.data.Dataset.from_tensor_slices(["a.tfrecord", "b.tfrecord"])
    ds = (files.interleave(tf.data.TFRecordDataset, num_parallel_calls=2)
          .map(lambda r: r, num_parallel_calls=2).filter(lambda r: True).batch(4).prefetch(1))
    assert describe_pipeline(ds) == \
        "from_tensor_slices > interleave > map > filter > batch > prefetch"
    assert describe_pipeline(tf.data.TFRecordDataset(["a"]).padded_batch(2).repeat()) == \
        "from_tensor_slices > TFRecordDataset > padded_batch > repeat"
