"""DatasetInput: a tf.data pipeline inside the training graph."""
from tfloop.callbacks.base import Callback
from tfloop.compat import tf, tfv1
from tfloop.input.base import InputSource, describe_spec

__all__ = ["DatasetInput"]


def _is_in_graph(dataset, graph):
    variant = getattr(dataset, "_variant_tensor", None)
    try:
        return variant is not None and variant.graph is graph
    except AttributeError:
        return False


class _InitializeIterator(Callback):
    _chief_only = False

    def __init__(self, source):
        self._source = source

    def _before_train(self):
        if not self._source.iterator_restored:
            self.trainer.sess.run(self._source.iterator.initializer)

    def __str__(self):
        return "InitializeIterator[{}]".format(self._source)


class DatasetInput(InputSource):
    """Take each step's inputs from a ``tf.data.Dataset`` iterated inside the graph.

    A finite dataset is repeated, and one pass over it is the default epoch (``steps_per_epoch``);
    an infinite dataset needs ``steps_per_epoch``. Each element must be a tuple (or list) in the
    order of ``inputs()``, or a dict keyed by input name. Each tower of a multi-device trainer gets
    its own elements.

    Args:
        dataset (tf.data.Dataset or callable): a function that builds the dataset (called inside
            the training graph), or a dataset already built in that graph.
        repeat (bool): repeat a finite dataset (for training). With ``repeat=False`` the iterator
            raises ``tf.errors.OutOfRangeError`` after one pass, and must be re-initialized
            (``iterator.initializer``) for the next one; the dataset must be finite.

    Example:
        >>> def make_dataset():
        ...     return tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(1000).batch(64)
        >>> TrainConfig(model=MyModel(), data=DatasetInput(make_dataset), max_epoch=10)
    """

    def __init__(self, dataset, repeat=True):
        if not (callable(dataset) or isinstance(dataset, tf.data.Dataset)):
            raise TypeError("DatasetInput needs a tf.data.Dataset or a function that builds one, got "
                            "{!r}.".format(dataset))
        self._dataset_or_fn = dataset
        self.repeat = bool(repeat)
        self._size = None
        self.iterator = None
        self.iterator_restored = False

    def _build_dataset(self):
        graph = tfv1.get_default_graph()
        ds = self._dataset_or_fn
        if not isinstance(ds, tf.data.Dataset):
            ds = ds()
            if not isinstance(ds, tf.data.Dataset):
                raise TypeError("The function given to DatasetInput returned {!r}, not a "
                                "tf.data.Dataset.".format(ds))
        if not _is_in_graph(ds, graph):
            raise ValueError(
                "DatasetInput got a tf.data.Dataset built outside tfloop's training graph (e.g. "
                "eagerly). Pass the function that builds it instead: DatasetInput(make_dataset).")
        return ds

    def _check_structure(self, ds, signature):
        spec = ds.element_spec
        if isinstance(spec, dict):
            missing = [s.name for s in signature if s.name not in spec]
            if missing:
                raise ValueError("Dataset elements are dicts with keys {} but inputs() needs {}."
                                 .format(sorted(spec), missing))
            self._keys = [s.name for s in signature]
            specs = [spec[k] for k in self._keys]
        else:
            self._keys = None
            specs = list(spec) if isinstance(spec, (tuple, list)) else [spec]
            if len(specs) != len(signature):
                raise ValueError("Dataset elements have {} components but inputs() declares {} ({})."
                                 .format(len(specs), len(signature),
                                         ", ".join(describe_spec(s) for s in signature)))
        for got, want in zip(specs, signature):
            if not isinstance(got, tf.TensorSpec):
                raise TypeError("Dataset component for input {} is {}, not a dense tensor.".format(
                    describe_spec(want), got))
            if got.dtype != want.dtype or not got.shape.is_compatible_with(want.shape):
                raise ValueError("Dataset component {} {} does not match input {}.".format(
                    got.dtype.name, got.shape, describe_spec(want)))

    def _setup(self, input_signature):
        ds = self._build_dataset()
        self._check_structure(ds, input_signature)
        cardinality = self._cardinality(ds)
        if not self.repeat and cardinality == tf.data.INFINITE_CARDINALITY:
            raise ValueError("DatasetInput(repeat=False) needs a finite dataset, but this one is "
                             "infinite (does it call .repeat()?).")
        self._size = cardinality if cardinality is not None and cardinality > 0 else None
        if self._size is not None and self.repeat:
            ds = ds.repeat()
        with tf.name_scope("DatasetInput"):
            self.iterator = tfv1.data.make_initializable_iterator(ds)

    @staticmethod
    def _cardinality(ds):
        cardinality = ds.cardinality()
        try:
            with tfv1.Session(graph=cardinality.graph) as sess:
                return int(sess.run(cardinality))
        except (tf.errors.OpError, ValueError):
            return None

    def _get_input_tensors(self):
        element = self.iterator.get_next()
        if self._keys is not None:
            element = [element[k] for k in self._keys]
        elif not isinstance(element, (tuple, list)):
            element = [element]
        tensors = []
        for tensor, spec in zip(element, self.input_signature):
            tensor = tf.identity(tensor, name=spec.name) if spec.name else tensor
            tensor.set_shape(spec.shape)
            tensors.append(tensor)
        return tensors

    def _get_callbacks(self):
        return [_InitializeIterator(self)]

    def size(self):
        return self._size
