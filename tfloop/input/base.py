"""InputSource: where the input tensors of each training step come from."""
import dataclasses
from typing import Any

import numpy as np

from tfloop.compat import tf
from tfloop.input.casting import (
    INTEGRAL,
    NARROWING,
    SAFE,
    UNSAFE,
    cast_kind,
    check_integer_range,
    check_integral_values,
    note_fed_cast,
)
from tfloop.utils.checks import check_int, repeated

__all__ = ["InputSource", "check_input_signature", "UnsavedPosition"]


@dataclasses.dataclass(frozen=True)
class UnsavedPosition:
    """:meth:`InputSource.setup_state`'s answer when the source's position is not saved.

    Attributes:
        reason (str): why, as a phrase (it goes into log lines and the resume state).
        inexact (bool): the source has a position that cannot be saved, so a resumed run is not
            exact (e.g. a tf.data pipeline with a stateful op); False for a source that has no
            position of its own.

    Example:
        >>> UnsavedPosition("the input pipeline cannot be saved (PyFunc is stateful)",
        ...                 inexact=True)
    """

    reason: str
    inexact: bool = False

    def __str__(self) -> str:
        return self.reason


def check_input_signature(signature):
    """Check that ``signature`` is a non-empty list of ``tf.TensorSpec`` with distinct names."""
    signature = list(signature)
    for i, spec in enumerate(signature):
        if not isinstance(spec, tf.TensorSpec):
            raise TypeError(f"inputs() must return a list of tf.TensorSpec; item {i} is {spec!r} "
                            f"({type(spec).__name__}).")
    duplicates = repeated(s.name for s in signature if s.name)
    if duplicates:
        raise ValueError(f"inputs() has duplicate names: {', '.join(duplicates)}; give every input "
                         "a name of its own.")
    return signature


def describe_spec(spec):
    return f"{spec.name or '<unnamed>'}: {spec.dtype.name} {spec.shape}"


def check_value_matches_spec(value, spec, where):
    """Check a numpy value against a TensorSpec; raise ValueError naming ``where`` if it misfits."""
    try:
        arr = np.asarray(value)
    except ValueError as e:
        raise ValueError(f"{where}: the value for input {describe_spec(spec)} is ragged (its "
                         f"rows differ in length), so it is no array: {e} Pad or crop the rows "
                         f"to one shape, or batch examples of one shape.") from None
    shape = spec.shape
    if shape.rank is not None:
        if arr.ndim != shape.rank or any(d is not None and d != a for d, a in zip(shape.as_list(),
                                                                                     arr.shape)):
            raise ValueError(f"{where}: got shape {arr.shape} for input {describe_spec(spec)}.")
    if arr.dtype == spec.dtype.as_numpy_dtype:
        return arr
    kind = cast_kind(arr.dtype, spec.dtype)
    if kind == UNSAFE:
        raise ValueError(f"{where}: got dtype {arr.dtype} for input {describe_spec(spec)}.")
    if kind in (INTEGRAL, NARROWING):
        check = check_integral_values if kind == INTEGRAL else check_integer_range
        cast = check(arr, spec.dtype, where, describe_spec(spec))
        note_fed_cast(where.split(" ", 1)[0], spec.name, arr.dtype, spec.dtype)
        return cast
    if kind == SAFE:
        # ``where`` starts with the source's name, e.g. "FeedInput datapoint 3".
        note_fed_cast(where.split(" ", 1)[0], spec.name, arr.dtype, spec.dtype)
    return arr


def reads_as_batched(spec):
    """Whether input ``spec`` reads unambiguously as a batch of fixed-shape examples: a leading
    ``None`` and every other dimension known (``(None, 3)``, ``(None,)``).

    tensorpack gives a leading ``None`` no batch meaning, and neither does tfloop's training: an
    input ``image (None, None, 3)`` may be one image of any size per step (FasterRCNN's inputs),
    whose leading dimension is its height. Only inputs that read as batches take part in
    :func:`check_same_batch_size`.
    """
    dims = spec.shape.as_list() if spec.shape.rank else []
    return bool(dims) and dims[0] is None and all(d is not None for d in dims[1:])


def batch_sizes(shapes, signature):
    """``[(input name, batch size)]`` of the components whose input reads as batched (see
    :func:`reads_as_batched`) and whose leading size is known."""
    sizes = []
    for shape, spec in zip(shapes, signature):
        if reads_as_batched(spec) and len(shape) and shape[0] is not None:
            sizes.append((spec.name, int(shape[0])))
    return sizes


def check_same_batch_size(shapes, signature, where):
    """ValueError naming ``where`` and the inputs when the batch sizes of the components that read
    as batches differ: the model would fail in some op later (often in the gradients) or broadcast
    silently. Inputs with another unknown dimension (one image of any size per step) are left
    out: their leading dimension need not count examples."""
    sizes = batch_sizes(shapes, signature)
    if len({size for _, size in sizes}) > 1:
        listed = ", ".join(f"{name}: {size}" for name, size in sizes)
        raise ValueError(f"{where}: the inputs have different batch sizes ({listed}); every "
                         f"component must hold the same number of examples (check how each is "
                         f"batched).")


class InputSource:
    """Base class of input sources.

    The trainer calls :meth:`setup` once with the model's input signature, then
    :meth:`get_input_tensors` once per tower (each call of a multi-tower trainer gets its own
    batch), and registers :meth:`get_callbacks` before the user's callbacks.

    Example:
        >>> source = DatasetInput(make_dataset)
        >>> callbacks = source.setup(model.get_input_signature())
        >>> image, label = source.get_input_tensors()
    """

    _setup_done = False
    batches_per_step = 1

    def setup(self, input_signature: list[Any], batches_per_step: int = 1) -> list[Any]:
        """Build the source's graph part; returns the callbacks it needs.

        Args:
            input_signature (list[tf.TensorSpec]): the model's inputs.
            batches_per_step (int): the batches one training step takes, one per tower (a
                multi-device trainer's number of towers): a source that marks the ends of passes
                (:meth:`marks_pass_ends`) cuts each pass to a multiple of it.
        """
        if self._setup_done:
            raise RuntimeError(f"{self} was already set up; an InputSource serves one trainer.")
        self.input_signature = check_input_signature(input_signature)
        check_int(batches_per_step, f"{self}: batches_per_step", at_least=1)
        self.batches_per_step = int(batches_per_step)
        self._setup(self.input_signature)
        self._setup_done = True
        return self.get_callbacks()

    def setup_done(self) -> bool:
        return self._setup_done

    def get_input_tensors(self) -> list[Any]:
        """The input tensors for one tower, in the order of the input signature."""
        if not self._setup_done:
            raise RuntimeError(f"{self}.setup() must be called before get_input_tensors().")
        return self._get_input_tensors()

    def get_callbacks(self) -> list[Any]:
        """Callbacks the trainer must run for this source (not chief-only)."""
        callbacks = list(self._get_callbacks())
        for cb in callbacks:
            cb.chief_only = False
        return callbacks

    def size(self) -> int | None:
        """Datapoints (steps) in one pass over the data, or None when unknown."""
        return None

    def is_empty(self) -> bool:
        """Whether the source is known to hold no datapoint (e.g. ``size() == 0``)."""
        return self.size() == 0

    def is_infinite(self) -> bool:
        """Whether the data is known to repeat forever (a dataset that calls ``.repeat()``):
        none of its passes ends."""
        return False

    def describe_pipeline(self) -> str | None:
        """The stages of the source's pipeline (``"TFRecordDataset > map > filter > batch"``),
        to name it in messages; None for a source without one."""
        return None

    # ---- epochs that are passes over data of unknown length -------------------------------------
    def marks_pass_ends(self) -> bool:
        """Whether the source says where each pass over its data ends (known after
        :meth:`setup`): a finite source whose length is not known. A training without
        ``steps_per_epoch`` then makes each epoch one pass over it, ending with the step whose
        :meth:`pass_end_flags` are true."""
        return False

    def pass_end_flags(self) -> list[Any]:
        """One bool scalar tensor for each :meth:`get_input_tensors` call of the training step:
        true when the batch it gives is the last of its pass (each pass is cut to a multiple of
        ``batches_per_step`` batches, so a step's batches all are of one pass). Empty for a
        source that does not mark the ends of passes.

        Example:
            >>> source.setup(model.get_input_signature())
            >>> x, y = source.get_input_tensors()
            >>> last, = source.pass_end_flags()     # fetched with the step that takes x, y
        """
        return []

    def skip_to_next_pass(self, sess: Any) -> None:
        """Read and drop the rest of the current pass, so that the next batch is the first of a
        new pass (a cluster ends every worker's epoch with the shortest shard's pass; the others
        drop the rest of theirs). Called between steps, only when a pass is under way."""
        raise ValueError(f"{self} does not mark the ends of passes: it has none to skip to.")

    # ---- the position, for a resumed run --------------------------------------------------------
    def setup_state(self) -> UnsavedPosition | None:
        """Prepare :meth:`state_dict` and :meth:`load_state_dict` (graph ops: call it after
        :meth:`setup`, before the graph is finalized). Returns None when the source's position
        can be saved, else an :class:`UnsavedPosition` saying why not (a resumed run then
        restarts the source from its beginning).

        A Python source (``QueueInput``, ``FeedInput``) keeps its position in the state of its
        feeder callback (the datapoint after the last one trained), saved with the callbacks'
        states: it returns None and its :meth:`state_dict` is None.
        """
        return UnsavedPosition(f"the input {self} has no saveable position")

    def state_dict(self, sess: Any) -> bytes | None:
        """The source's position beyond its callbacks' states, as bytes (a tf.data iterator's),
        or None. Needs :meth:`setup_state`."""
        return None

    def load_state_dict(self, sess: Any, state: bytes) -> None:
        """Move the source to the position ``state`` from :meth:`state_dict` (in a session
        whose variables are initialized, before training starts).

        Example:
            >>> source.setup_state()                # before the graph is finalized
            >>> blob = source.state_dict(sess)      # saved with a checkpoint
            >>> source.load_state_dict(sess, blob)  # in the resumed run
        """
        raise ValueError(f"{self} has no position to restore.")

    def _setup(self, input_signature):
        """Create the graph part of the source."""

    def _get_input_tensors(self):
        raise TypeError(f"{type(self).__name__} does not provide input tensors.")

    def _get_callbacks(self):
        return []

    def __str__(self):
        return type(self).__name__

