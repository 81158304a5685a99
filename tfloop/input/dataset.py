"""DatasetInput: a tf.data pipeline inside the training graph."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource, UnsavedPosition
from tfloop.input.dataflow_dataset import dataflow_to_dataset
from tfloop.input.eager_pipeline import EagerPipeline
from tfloop.input.element_check import conform_tensor, match_element_spec
from tfloop.input.fed_arrays import DEFAULT_MIN_BYTES, ArrayFeeds
from tfloop.input.graph_dataset import (
    SerializedDataset,
    as_graph_dataset,
    built_eagerly,
    eager_definition,
)
from tfloop.input.iterator_state import IteratorState
from tfloop.input.passes import describe_pipeline, held_element, mark_pass_ends
from tfloop.input.static_rewrite import without_static_rewrite

__all__ = ["DatasetInput"]


class _InitializeIterator(Callback):
    _chief_only = False

    def __init__(self, source):
        self._source = source

    def _before_train(self):
        self._source.start(self.trainer.sess)

    def __str__(self):
        return f"InitializeIterator[{self._source}]"


class DatasetInput(InputSource):
    """Take each step's inputs from a ``tf.data.Dataset`` iterated inside the graph.

    A finite dataset is repeated, and one pass over it is the default epoch: its size, when
    TensorFlow knows it (``steps_per_epoch``); otherwise (TFRecord files, a ``filter``, an
    ``interleave``, the tf.data service) the epoch ends where the pass does, which the trainer
    learns from the pipeline (see :mod:`tfloop.input.passes`). An infinite dataset needs
    ``steps_per_epoch``. Each element must be a tuple (or list) in the order of ``inputs()``, or a
    dict keyed by input name. Each tower of a multi-device trainer gets its own elements.

    The dataset may be built eagerly, anywhere in the program (``map``, ``shuffle``, ``cache``,
    ``interleave``, ``prefetch``, ``tensorflow_datasets`` pipelines, Python functions too): its
    definition is rebuilt in the training graph (see :func:`~tfloop.input.as_graph_dataset`), so
    it runs and resumes like a dataset built there. A component whose dtype differs from the input
    by a safe cast (float64 -> float32, int64 -> int32) is cast in the graph, with a note; one
    whose shape the dataset does not fix is checked at run time (see
    :mod:`tfloop.input.element_check`).

    Args:
        dataset (tf.data.Dataset or callable): a dataset (built eagerly, or in the training
            graph), or a function that builds one (called inside the training graph).
        repeat (bool): repeat a finite dataset (for training). With ``repeat=False`` the iterator
            raises ``tf.errors.OutOfRangeError`` after one pass, and must be re-initialized
            (:meth:`initialize`) for the next one; the dataset must be finite.
        feed_arrays_from (int or None): numpy arrays of at least this many bytes handed to
            ``from_tensor_slices`` / ``from_tensors`` (in the function building the dataset, or
            eagerly), are fed when the iterator is initialized instead of stored in the graph
            (see :mod:`tfloop.input.fed_arrays`); None stores them in the graph.

    Attributes:
        feeds (ArrayFeeds): the fed arrays, once set up (``feeds.feed_dict``, ``feeds.nbytes()``).

    Example:
        >>> ds = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(1000).batch(64)
        >>> TrainConfig(model=MyModel(), data=DatasetInput(ds), max_epoch=10)
    """

    def __init__(self, dataset, repeat=True, feed_arrays_from=DEFAULT_MIN_BYTES):
        if not (callable(dataset) or isinstance(dataset, tf.data.Dataset)):
            raise TypeError(f"DatasetInput needs a tf.data.Dataset or a function that builds one, "
                            f"got {dataset!r}.")
        self.feeds = ArrayFeeds(feed_arrays_from)
        if isinstance(dataset, tf.data.Dataset) and built_eagerly(dataset):
            # Read now (its stages, or its serialized definition), so that a dataset TensorFlow
            # cannot serialize is refused at once.
            dataset = eager_definition(dataset, "DatasetInput")
        self._dataset_or_fn = dataset
        self.repeat = bool(repeat)
        self._size = None
        self._empty = False
        self._infinite = False
        self._marks_passes = False
        self._pass_end_flags = []
        self._skip_op = None
        self._pipeline = None
        self.iterator = None
        self._iterator_state = None
        self._restored = False

    _label = "DatasetInput"  # names the source in its errors and graph scope
    dataflow_to_dataset = staticmethod(dataflow_to_dataset)  # tensorpack's TFDatasetInput's

    def _setup(self, input_signature):
        self._graph = tfv1.get_default_graph()
        ds = as_graph_dataset(self._dataset_or_fn, self._label, self.feeds)
        self._keys, self._plans = match_element_spec(ds.element_spec, input_signature)
        eager = isinstance(self._dataset_or_fn, (SerializedDataset, EagerPipeline))
        self._pipeline = describe_pipeline(self._dataset_or_fn.dataset if eager else ds)
        cardinality = self._cardinality(ds, self.feeds.stand_ins())
        self._infinite = cardinality == tf.data.INFINITE_CARDINALITY
        if not self.repeat and self._infinite:
            raise ValueError(f"{self._label}(repeat=False) needs a finite dataset, but this one "
                             "is infinite (does it call .repeat()?).")
        self._size = cardinality if cardinality is not None and cardinality > 0 else None
        self._empty = cardinality == 0
        self._marks_passes = self.repeat and cardinality not in (0, tf.data.INFINITE_CARDINALITY) \
            and self._size is None
        if self._size is not None and self.repeat:
            ds = ds.repeat()
        ds = without_static_rewrite(ds, self.feeds.nbytes())
        ds = self._last_stage(ds)
        if self._marks_passes:
            self._element_spec = ds.element_spec
            ds = mark_pass_ends(ds, self.batches_per_step)
        with tf.name_scope(self._label):
            self.iterator = tfv1.data.make_initializable_iterator(ds)
            if self._marks_passes:
                self._skip_op = tfv1.while_loop(lambda last: tf.logical_not(last),
                                                lambda last: self.iterator.get_next()[1],
                                                [tf.constant(False)], name="skip_to_next_pass")

    def _last_stage(self, ds):
        """The last stage of the pipeline, after the checked ``ds`` (repeated when its size is
        known; when not, the passes are marked after this stage)."""
        return ds

    @staticmethod
    def _cardinality(ds, feed_dict):
        cardinality = ds.cardinality()
        try:
            with tfv1.Session(graph=cardinality.graph) as sess:
                return int(sess.run(cardinality, feed_dict=feed_dict))
        except (tf.errors.OpError, ValueError):
            return None

    def _get_input_tensors(self):
        element = self.iterator.get_next()
        if self._marks_passes:
            held, last = element
            element = held_element(held, self._element_spec)
            if tfv1.get_default_graph() is self._graph:  # not in a steps_per_run loop's body
                self._pass_end_flags.append(last)
        if self._keys is not None:
            element = [element[k] for k in self._keys]
        elif not isinstance(element, (tuple, list)):
            element = [element]
        return [conform_tensor(tensor, plan, self._label)
                for tensor, plan in zip(element, self._plans)]

    def _get_callbacks(self):
        return [_InitializeIterator(self)]

    def initialize(self, sess):
        """Initialize the iterator (back to the first element), feeding the pipeline's arrays."""
        sess.run(self.iterator.initializer, feed_dict=self.feeds.feed_dict)

    def start(self, sess):
        """Initialize the iterator before training, unless :meth:`load_state_dict` moved it to a
        saved position already."""
        if not self._restored:
            self.initialize(sess)

    def setup_state(self):
        """Build the ops that save and restore the iterator's position; the reason when the
        pipeline has a stateful op (``py_function``, an unseeded random op, a generator)."""
        state = IteratorState(self.iterator, self.feeds)
        if not state.savable:
            return UnsavedPosition(f"the input pipeline cannot be saved ({state.reason})",
                                   inexact=True)
        state.build_save()
        state.build_restore()
        self._iterator_state = state
        return None

    def state_dict(self, sess):
        """The iterator's position, serialized by TensorFlow (None without :meth:`setup_state`)."""
        return None if self._iterator_state is None else self._iterator_state.save(sess)

    def load_state_dict(self, sess, state):
        """Initialize the iterator and move it to the position ``state``.

        Raises:
            tf.errors.OpError: ``state`` does not fit this pipeline.
        """
        if self._iterator_state is None:
            raise ValueError(f"{self}: setup_state() must build the restore ops first.")
        self._iterator_state.restore(sess, state)
        self._restored = True

    def size(self):
        return self._size

    def is_empty(self):
        """Whether the dataset has no element at all (its size is then None, as an infinite
        one's)."""
        return self._empty

    def is_infinite(self):
        return self._infinite

    def describe_pipeline(self):
        return self._pipeline

    def marks_pass_ends(self):
        """Whether the dataset is finite of unknown length and repeated: each element comes with
        whether it ends its pass (see :mod:`tfloop.input.passes`)."""
        return self._marks_passes

    def pass_end_flags(self):
        return list(self._pass_end_flags)

    def skip_to_next_pass(self, sess):
        """Read the rest of the current pass (inside one session call) and drop it."""
        if self._skip_op is None:
            super().skip_to_next_pass(sess)
        sess.run(self._skip_op)
