"""Input sources by other means: placeholders only, a feed-free marker class, and remapping a
source's tensors to a model's inputs by name (tensorpack's names)."""
from tfloop.compat import tfv1
from tfloop.input.base import InputSource
from tfloop.input.feed import FeedInput

__all__ = ["PlaceholderInput", "FeedfreeInput", "remap_input_source"]


class PlaceholderInput(InputSource):
    """Placeholders for the inputs, fed by whoever runs the graph (e.g. for building a graph to
    export or to run by hand); every tower gets the same placeholders.

    Example:
        >>> source = PlaceholderInput()
        >>> source.setup(model.get_input_signature())
        >>> image, label = source.get_input_tensors()
    """

    def _setup(self, input_signature):
        self._placeholders = [tfv1.placeholder(s.dtype, s.shape, name=s.name)
                              for s in input_signature]

    def _get_input_tensors(self):
        return list(self._placeholders)


class _FeedfreeMeta(type):
    def __instancecheck__(cls, obj):
        if cls is FeedfreeInput:
            return isinstance(obj, InputSource) and not isinstance(obj, (FeedInput,
                                                                         PlaceholderInput))
        return super().__instancecheck__(obj)


class FeedfreeInput(InputSource, metaclass=_FeedfreeMeta):
    """The input sources whose tensors come from the graph, not from ``feed_dict``: every tfloop
    source except ``FeedInput`` and ``PlaceholderInput`` is an instance. Subclass it for a source
    of your own.

    Example:
        >>> isinstance(DatasetInput(make_dataset), FeedfreeInput)
        True
    """


class _RemappedInput(InputSource):
    def __init__(self, source, names):
        self._source = source
        self._names = names

    def _setup(self, input_signature):
        by_name = {s.name: s for s in input_signature}
        unknown = [n for n in self._names if n not in by_name]
        if unknown:
            raise ValueError(f"remap_input_source: {unknown} are not inputs of the model, whose "
                             f"inputs are {sorted(by_name)}.")
        missing = [s.name for s in input_signature if s.name not in self._names]
        if missing:
            raise ValueError(f"remap_input_source: the model also needs {missing}, which names="
                             f"{self._names} does not provide.")
        self._order = [self._names.index(s.name) for s in input_signature]
        self._callbacks = self._source.setup([by_name[n] for n in self._names],
                                             batches_per_step=self.batches_per_step)

    def _get_input_tensors(self):
        tensors = self._source.get_input_tensors()
        return [tensors[i] for i in self._order]

    def _get_callbacks(self):
        return self._callbacks

    def size(self):
        return self._source.size()

    def is_empty(self):
        return self._source.is_empty()

    def is_infinite(self):
        return self._source.is_infinite()

    def describe_pipeline(self):
        return self._source.describe_pipeline()

    def marks_pass_ends(self):
        return self._source.marks_pass_ends()

    def pass_end_flags(self):
        return self._source.pass_end_flags()

    def skip_to_next_pass(self, sess):
        self._source.skip_to_next_pass(sess)

    def __str__(self):
        return f"remap_input_source({self._source}, {self._names})"


def remap_input_source(input, names):
    """An input source giving ``input``'s tensors to the model's inputs by name: ``input``
    produces the inputs named ``names``, in that order, whatever the order of ``inputs()``.

    Example:
        >>> # the dataset yields (label, image); the model's inputs are image, label
        >>> remap_input_source(DatasetInput(make_dataset), ["label", "image"])
    """
    if not isinstance(input, InputSource):
        raise TypeError(f"remap_input_source needs an InputSource, got {input!r}.")
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"remap_input_source: names must be a list of input names, got {names!r}.")
    return _RemappedInput(input, list(names))
