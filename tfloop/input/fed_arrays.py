"""Large arrays of a tf.data pipeline kept out of the graph, fed when the iterator starts.

``tf.data.Dataset.from_tensor_slices((x, y))`` built in a graph stores ``x`` and ``y`` in the
graph as constants: every session that runs the graph copies them, and every graph tfloop writes
(TensorBoard's events, the checkpoints' ``.meta``) holds them. :class:`ArrayFeeds` keeps the large
ones out: while the data function runs, numpy arrays of at least ``min_bytes`` handed to
``from_tensor_slices`` (with the other numeric arrays of the same call) or ``from_tensors``
become placeholders of the same dtype, and the arrays are fed whenever the pipeline runs (the
iterator's initialization, the size and state checks). A dataset built eagerly is brought in the
same way: its arrays (:mod:`tfloop.input.eager_pipeline`), or the large constants of its
serialized definition, become placeholders, fed with their values.

The pipeline is the same one: same elements, same order, same ``element_spec``. An array is fed
without a copy (see :func:`_aligned`).
"""
import concurrent.futures
import contextlib
import threading

import numpy as np

from tfloop.compat import tf, tfv1

__all__ = ["ArrayFeeds", "DEFAULT_MIN_BYTES"]

DEFAULT_MIN_BYTES = 1 << 16
# TensorFlow feeds an array whose data starts at a multiple of this without copying it.
_ALIGNMENT = 64

_NUMERIC_KINDS = "biufc"
_CONSTRUCTORS = ("from_tensor_slices", "from_tensors")
_active = threading.local()
_install_lock = threading.Lock()
_installed = {"count": 0, "originals": {}}


def _aligned_buffer(nbytes, zeroed):
    """A writable buffer of ``nbytes`` whose data starts at a multiple of ``_ALIGNMENT``. Zeroed,
    its pages are mapped only when first touched (a stand-in that is never read costs nothing);
    not zeroed, it is for data about to be written (numpy maps such memory faster)."""
    buffer = (np.zeros if zeroed else np.empty)(nbytes + _ALIGNMENT, np.uint8)
    start = -buffer.ctypes.data % _ALIGNMENT
    return buffer[start:start + nbytes]


def _is_aligned(array):
    return array.flags.c_contiguous and array.ctypes.data % _ALIGNMENT == 0


def _aligned(array):
    """``array``, or a copy of it whose data is aligned for TensorFlow: a session copies an
    unaligned array at every run it is fed to, an aligned one never."""
    if _is_aligned(array):
        return array
    aligned = _aligned_buffer(array.nbytes, False).view(array.dtype).reshape(array.shape)
    aligned[...] = array
    return aligned


def _stand_in(array):
    """An aligned array of ``array``'s shape and dtype that costs no copy and no memory until
    read: for the runs that look at the pipeline's shapes, never at its data."""
    return _aligned_buffer(array.nbytes, True).view(array.dtype).reshape(array.shape)


def _numeric(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in _NUMERIC_KINDS


def _map_leaves(structure, function):
    """``structure`` with ``function`` applied to its leaves: tuples, named tuples and dicts are
    walked; a list is one tensor to tf.data, so it is a leaf."""
    if isinstance(structure, dict):
        return type(structure)((k, _map_leaves(v, function)) for k, v in structure.items())
    if isinstance(structure, tuple):
        items = [_map_leaves(v, function) for v in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    return function(structure)


def _leaves(structure):
    found = []
    _map_leaves(structure, found.append)
    return found


def _capturing():
    """The ArrayFeeds capturing on this thread in the current default graph, or None."""
    feeds = getattr(_active, "feeds", None)
    if feeds is None or tfv1.get_default_graph() is not _active.graph:
        return None
    return feeds


def _wrap(constructor_name, original):
    function = original.__func__
    sliced = constructor_name == "from_tensor_slices"

    def constructor(tensors, name=None):
        feeds = _capturing()
        if feeds is not None:
            tensors = feeds.substitute(tensors, sliced)
        return function(tensors, name=name)

    constructor.__doc__ = function.__doc__
    constructor.__name__ = constructor_name
    return staticmethod(constructor)


def _install():
    with _install_lock:
        if _installed["count"] == 0:
            for name in _CONSTRUCTORS:
                original = tf.data.Dataset.__dict__[name]
                _installed["originals"][name] = original
                setattr(tf.data.Dataset, name, _wrap(name, original))
        _installed["count"] += 1


def _uninstall():
    with _install_lock:
        _installed["count"] -= 1
        if _installed["count"] == 0:
            for name, original in _installed["originals"].items():
                setattr(tf.data.Dataset, name, original)
            _installed["originals"].clear()


class ArrayFeeds:
    """The large arrays of one input pipeline, as placeholders and the values they are fed.

    Args:
        min_bytes (int or None): arrays of at least this many bytes are fed instead of stored in
            the graph; None stores every array in the graph (TensorFlow's behaviour).

    Example:
        >>> feeds = ArrayFeeds(min_bytes=1 << 20)
        >>> with feeds.capture():
        ...     dataset = tf.data.Dataset.from_tensor_slices((images, labels)).batch(32)
        >>> iterator = tf.compat.v1.data.make_initializable_iterator(dataset)
        >>> sess.run(iterator.initializer, feed_dict=feeds.feed_dict)
    """

    def __init__(self, min_bytes=DEFAULT_MIN_BYTES):
        if min_bytes is not None and (isinstance(min_bytes, bool) or not isinstance(min_bytes, int)
                                      or min_bytes < 0):
            raise ValueError(f"DatasetInput's feed_arrays_from (the size in bytes from which an "
                             f"array of the pipeline is fed rather than stored in the graph) must "
                             f"be an int >= 0 or None, got {min_bytes!r}: e.g. "
                             f"feed_arrays_from={DEFAULT_MIN_BYTES} (the default).")
        self.min_bytes = min_bytes
        self._given = {}        # placeholder -> the array as handed to the pipeline
        self._pending = {}      # placeholder -> future of its aligned copy
        self._copier = None

    def __bool__(self):
        return bool(self._given)

    def nbytes(self):
        """Bytes fed at each run of the pipeline's initialization."""
        return sum(array.nbytes for array in self._given.values())

    @property
    def feed_dict(self):
        """``{placeholder: array}`` to feed the pipeline's initialization (waits for the aligned
        copies still being made)."""
        if self._pending:
            for placeholder, copy in list(self._pending.items()):
                self._given[placeholder] = copy.result()
                del self._pending[placeholder]
            self._copier.shutdown()
            self._copier = None
        return dict(self._given)

    def stand_ins(self):
        """``{placeholder: array}`` of the fed shapes and dtypes, without the data (no wait, no
        copy): for runs that only look at shapes, such as the pipeline's cardinality."""
        return {placeholder: array if _is_aligned(array) else _stand_in(array)
                for placeholder, array in self._given.items()}

    @contextlib.contextmanager
    def capture(self):
        """Within this block, on this thread, ``tf.data.Dataset.from_tensor_slices`` and
        ``from_tensors`` in the current default graph take large numpy arrays as placeholders."""
        if self.min_bytes is None:
            yield
            return
        previous = getattr(_active, "feeds", None), getattr(_active, "graph", None)
        _install()
        _active.feeds, _active.graph = self, tfv1.get_default_graph()
        try:
            yield
        finally:
            _active.feeds, _active.graph = previous
            _uninstall()

    def _large(self, value):
        return self.min_bytes is not None and _numeric(value) and value.nbytes >= self.min_bytes

    def _placeholder(self, array, sliced):
        # Sliced, the number of rows is in no element's shape: left open, so that a check can
        # feed an array without rows (IteratorState).
        shape = [None] + list(array.shape[1:]) if sliced else array.shape
        placeholder = tfv1.placeholder(tf.as_dtype(array.dtype), shape, name="fed_array")
        self.add(placeholder, array)
        return placeholder

    def substitute(self, structure, sliced=True):
        """``structure`` with its large arrays replaced by placeholders (tuples, named tuples and
        dicts are walked; a list is one tensor to tf.data, so it is left as is).

        ``sliced`` (``from_tensor_slices``): when one array is large, every numeric array of the
        structure is fed, so that all components can be fed without rows (see IteratorState)."""
        if sliced and any(self._large(leaf) for leaf in _leaves(structure)):
            return _map_leaves(structure, lambda leaf: self._placeholder(leaf, leaf.ndim > 0)
                               if _numeric(leaf) else leaf)
        return _map_leaves(structure, lambda leaf: self._placeholder(leaf, False)
                           if self._large(leaf) else leaf)

    def take_constants(self, graph_def):
        """Replace the large constants of ``graph_def`` (a serialized pipeline) by placeholders of
        the same name, dtype and shape; returns their names and values, to be fed once the
        definition is imported."""
        taken = {}
        if self.min_bytes is None:
            return taken
        for node in graph_def.node:
            if node.op != "Const" or node.attr["dtype"].type == tf.string.as_datatype_enum:
                continue
            proto = node.attr["value"].tensor
            dtype = tf.as_dtype(proto.dtype)
            shape = [dim.size for dim in proto.tensor_shape.dim]
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.size
            # The size from the shape: reading tensor_content, or ByteSize(), copies the data.
            if nbytes < max(self.min_bytes, 1):
                continue
            content = proto.tensor_content
            if len(content) != nbytes:      # a value written another way (one repeated element)
                continue
            taken[node.name] = np.frombuffer(content, dtype.as_numpy_dtype).reshape(shape)
            node.op = "Placeholder"
            node.ClearField("attr")
            node.attr["dtype"].type = dtype.as_datatype_enum
            node.attr["shape"].shape.CopyFrom(tf.TensorShape(shape).as_proto())
        return taken

    def add(self, placeholder, array):
        """Feed ``array`` to ``placeholder`` whenever the pipeline runs. An array whose data is not
        aligned as TensorFlow needs to feed it without copying is copied once, aligned, in a
        thread of its own while the graph and the session are built (:attr:`feed_dict` waits
        for it)."""
        self._given[placeholder] = array
        if not _is_aligned(array):
            if self._copier is None:
                self._copier = concurrent.futures.ThreadPoolExecutor(
                    1, thread_name_prefix="tfloop-align-arrays")
            self._pending[placeholder] = self._copier.submit(_aligned, array)
