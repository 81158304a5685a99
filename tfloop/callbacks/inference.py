"""Inferencers: what an :class:`InferenceRunner` computes over one pass of the validation data.

An inferencer names the tensors it needs from the inference tower, receives their values batch by
batch, and returns its statistics as a dict of scalars at the end of the pass; the runner puts
them to the monitors. The order of calls in one pass::

    before_inference
    for each batch:
        on_fetches(values of get_fetches(), batch_size)
    after_inference -> {"name": scalar, ...}
"""
import difflib
import numbers

import numpy as np

from tfloop.compat import tf, tfv1
from tfloop.tfutils.common import UnknownNameError, get_op_tensor_name
from tfloop.utils import logger
from tfloop.utils.checks import check_name

__all__ = ["Inferencer", "ScalarStats", "ClassificationError", "BinaryClassificationStats"]


def _as_name_list(names, what):
    if isinstance(names, str):
        names = [names]
    try:
        names = list(names)
    except TypeError:
        raise TypeError(f"{what} must be a tensor name or a list of names, "
                        f"got {names!r}.") from None
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad or not names:
        raise TypeError(f"{what} must be non-empty tensor names, got {names!r}.")
    return names


class Inferencer:
    """Base class of inferencers: subclasses override the underscore methods.

    Attributes:
        tower (TowerTensorHandle): the inference tower, set by :meth:`setup_graph`.
        fetch_tensors (list[tf.Tensor]): the tensors of :meth:`get_fetches`, in that order.
        batch_size (int): the leading dimension of the model's first input in the batch being
            processed (1 for a scalar input); set before each ``_on_fetches``.

    Example:
        >>> class MeanLogit(Inferencer):
        ...     def _get_fetches(self):
        ...         return ["logits"]
        ...     def _before_inference(self):
        ...         self.total, self.count = 0.0, 0
        ...     def _on_fetches(self, results):
        ...         self.total += results[0].sum()
        ...         self.count += results[0].size
        ...     def _after_inference(self):
        ...         return {"val-mean-logit": self.total / self.count}
    """

    tower = None
    fetch_tensors = None
    batch_size = None

    # ---- public methods: called by the InferenceRunner -----------------------------------------
    def setup_graph(self, tower):
        """Look up :meth:`get_fetches` in the inference ``tower`` (once, while building the graph).

        Raises:
            UnknownNameError: a name is not in the tower; the message names this inferencer, the
                name, and close matches among the tower's tensors.
        """
        self.tower = tower
        self.fetch_tensors = [self._lookup(tower, name) for name in self.get_fetches()]
        self._setup_graph()

    def before_inference(self):
        """Called before each pass over the data."""
        self._before_inference()

    def before_batch(self):
        """Called before each batch's session run, after :meth:`before_inference` (the hook
        other loops call ``before_val_iter`` or ``on_test_batch_begin``). With a ``tf.data``
        input of unknown length, the pass ends with one more call, before the run that finds
        the end of the data; ``DataParallelInferenceRunner`` calls it for each batch of a round
        of towers before that round's run."""
        self._before_batch()

    def get_fetches(self):
        """The names of the tensors to fetch for every batch, relative to the inference tower."""
        return _as_name_list(self._get_fetches(), f"{self}._get_fetches()")

    def on_fetches(self, results, batch_size):
        """Receive the values of :meth:`get_fetches` for one batch, and that batch's size."""
        self.batch_size = batch_size
        self._on_fetches(results)

    def after_inference(self):
        """The statistics of the pass: a dict of name -> scalar (or None for nothing)."""
        stats = self._after_inference()
        if stats is None:
            return {}
        if not isinstance(stats, dict):
            raise TypeError(f"{self}._after_inference() must return a dict of name -> scalar or "
                            f"None, got {stats!r}.")
        checked = {}
        for name, value in stats.items():
            if not isinstance(name, str) or np.ndim(value) != 0 or \
                    not isinstance(np.asarray(value).item(), numbers.Real):
                raise TypeError(f"{self}._after_inference() returned {name!r}: {value!r} for a "
                                "stat; stats must be named real scalars.")
            checked[name] = float(np.asarray(value).item())
        return checked

    # ---- methods to override --------------------------------------------------------------------
    def _setup_graph(self):
        """Check or prepare with ``self.fetch_tensors`` (e.g. their static shapes)."""

    def _before_inference(self):
        """Reset the statistics."""

    def _before_batch(self):
        """Prepare for the next batch (e.g. start a timer); the batch's values come to
        ``_on_fetches``."""

    def _get_fetches(self):
        raise TypeError(f"{type(self).__name__} must define _get_fetches() returning tensor names.")

    def _on_fetches(self, results):
        """Accumulate ``results``: numpy values, one per name of :meth:`get_fetches`."""

    def _after_inference(self):
        return None

    # ---- helpers --------------------------------------------------------------------------------
    def _lookup(self, tower, name):
        try:
            tensor = tower.get_tensor(name)
        except UnknownNameError:
            raise UnknownNameError(f"{self} asked for {name!r}, which is not in the inference "
                                   f"tower {tower.name!r}.{_close_matches(tower, name)}") from None
        if not isinstance(tensor, tf.Tensor):
            raise TypeError(f"{self} asked for {name!r}, which is the op {tensor.name} without "
                            "outputs; fetch a tensor.")
        return tensor

    def __str__(self):
        return type(self).__name__

    __repr__ = __str__


def _close_matches(tower, name):
    prefix = tower.ns_name + "/" if tower.ns_name else ""
    candidates = [op.name[len(prefix):] for op in tfv1.get_default_graph().get_operations()
                  if op.name.startswith(prefix)]
    close = difflib.get_close_matches(get_op_tensor_name(name)[0], candidates, n=5, cutoff=0.5)
    return f" Close matches: {', '.join(close)}." if close else ""


def _check_rank(inferencer, tensor, rank, hint):
    if tensor.shape.rank is not None and tensor.shape.rank != rank:
        raise ValueError(f"{inferencer} needs {tensor.name} to be "
                         f"{'a scalar' if rank == 0 else 'a per-example vector'}, but its shape is "
                         f"{tensor.shape}. {hint}")


def _check_value_rank(inferencer, name, value, rank):
    if np.ndim(value) != rank:
        raise ValueError(f"{inferencer} got a value of shape {np.shape(value)} for {name!r}; it "
                         f"needs {'a scalar' if rank == 0 else 'a per-example vector'}.")


class ScalarStats(Inferencer):
    """The mean of scalar tensors over the whole pass, weighted by batch size.

    Each tensor is taken as the mean over its batch (e.g. a loss), so the per-batch values are
    averaged with the batch size (the leading dimension of the model's first input) as weight:
    the result is the exact mean over all examples, also when the last batch is smaller.
    (tensorpack averages the batches unweighted.)

    Args:
        names (str or list[str]): scalar tensors in the inference tower.
        prefix (str): the stats are named ``<prefix>_<name>`` (just ``<name>`` when empty).

    Example:
        >>> InferenceRunner(make_val_dataset, [ScalarStats(["cost", "accuracy"])])
        >>> # puts validation_cost and validation_accuracy after each epoch
    """

    def __init__(self, names, prefix="validation"):
        self.names = _as_name_list(names, "ScalarStats names")
        if not isinstance(prefix, str):
            raise TypeError(f"ScalarStats prefix must be a string, got {prefix!r}.")
        self.prefix = prefix

    def _get_fetches(self):
        return self.names

    def _setup_graph(self):
        for tensor in self.fetch_tensors:
            _check_rank(self, tensor, 0, "Reduce it in the model, e.g. with tf.reduce_mean.")

    def _before_inference(self):
        self._sums = np.zeros(len(self.names))
        self._weight = 0

    def _on_fetches(self, results):
        for name, value in zip(self.names, results):
            _check_value_rank(self, name, value, 0)
        self._sums += np.asarray(results, dtype=np.float64) * self.batch_size
        self._weight += self.batch_size

    def _after_inference(self):
        means = self._sums / self._weight
        return {self._stat_name(name): mean for name, mean in zip(self.names, means)}

    def _stat_name(self, name):
        name = get_op_tensor_name(name)[0]
        return f"{self.prefix}_{name}" if self.prefix else name

    def __str__(self):
        return f"ScalarStats({self.names})"


class ClassificationError(Inferencer):
    """Classification error over the whole pass: wrong examples / all examples.

    The tensor is a per-example vector that is 1 where the prediction is wrong and 0 where it is
    right, e.g. ``tf.cast(tf.logical_not(tf.nn.in_top_k(logits, label, 1)), tf.float32,
    name="wrong-top1")``. Counting examples (not averaging batches) keeps the error exact when the
    last batch is smaller.

    Args:
        wrong_tensor_name (str): the per-example 0/1 vector in the inference tower.
        summary_name (str): the name of the stat put to the monitors.

    Example:
        >>> InferenceRunner(make_val_dataset, [
        ...     ClassificationError("wrong-top1", "val-error-top1"),
        ...     ClassificationError("wrong-top5", "val-error-top5")])
    """

    def __init__(self, wrong_tensor_name="incorrect_vector", summary_name="validation_error"):
        self.wrong_tensor_name = _as_name_list(wrong_tensor_name, "ClassificationError tensor")[0]
        self.summary_name = check_name(summary_name, "ClassificationError summary_name")

    def _get_fetches(self):
        return [self.wrong_tensor_name]

    def _setup_graph(self):
        _check_rank(self, self.fetch_tensors[0], 1,
                    "Give the per-example wrongness, not its mean (use ScalarStats for a mean).")

    def _before_inference(self):
        self._wrong = 0.0
        self._total = 0

    def _on_fetches(self, results):
        wrong = results[0]
        _check_value_rank(self, self.wrong_tensor_name, wrong, 1)
        self._wrong += float(np.sum(wrong))
        self._total += len(wrong)

    def _after_inference(self):
        if self._total == 0:
            raise ValueError(f"{self} saw no examples in this pass: every batch of "
                             f"{self.wrong_tensor_name!r} was empty.")
        return {self.summary_name: self._wrong / self._total}

    def __str__(self):
        return f"ClassificationError({self.wrong_tensor_name!r}, {self.summary_name!r})"


class BinaryClassificationStats(Inferencer):
    """Precision and recall of a binary classifier over the whole pass.

    Both tensors hold 0/1 values (or booleans) of the same shape: one per example, or a map per
    example (HED's per-pixel edges), every element counting. Puts ``<prefix>_precision``
    (true positives / predicted positives) and ``<prefix>_recall`` (true positives / actual
    positives). Like scikit-learn, a ratio with nothing to divide by is 0.0 (with a warning).

    Args:
        pred_tensor_name (str): the predicted labels, 0 or 1 per example.
        label_tensor_name (str): the true labels, 0 or 1 per example.
        prefix (str): prefix of the stat names.

    Example:
        >>> InferenceRunner(make_val_dataset,
        ...                 [BinaryClassificationStats("pred", "label", prefix="val")])
    """

    def __init__(self, pred_tensor_name, label_tensor_name, prefix="val"):
        self.pred_tensor_name, self.label_tensor_name = _as_name_list(
            [pred_tensor_name, label_tensor_name], "BinaryClassificationStats tensors")
        if not isinstance(prefix, str):
            raise TypeError(f"BinaryClassificationStats prefix must be a string, got {prefix!r}.")
        self.prefix = prefix

    def _get_fetches(self):
        return [self.pred_tensor_name, self.label_tensor_name]

    def _setup_graph(self):
        for tensor in self.fetch_tensors:
            if tensor.shape.rank == 0:
                raise ValueError(f"{self} needs {tensor.name} to hold 0/1 values per example "
                                 "(a vector, or a map per example), but it is a scalar.")

    def _before_inference(self):
        self._true_pos = 0
        self._pred_pos = 0
        self._label_pos = 0

    def _binary(self, name, value):
        value = np.asarray(value)
        if value.ndim == 0:
            raise ValueError(f"{self} got a scalar for {name!r}; it needs 0/1 values per example.")
        if not np.isin(value, (0, 1)).all():
            raise ValueError(f"{self} needs 0/1 values for {name!r}, got "
                             f"{np.unique(value)[:5].tolist()}: threshold scores first, e.g. "
                             "tf.cast(prob > 0.5, tf.int32).")
        return value.astype(bool)

    def _on_fetches(self, results):
        pred = self._binary(self.pred_tensor_name, results[0])
        label = self._binary(self.label_tensor_name, results[1])
        if pred.shape != label.shape:
            raise ValueError(f"{self}: predictions have shape {pred.shape} "
                             f"but labels {label.shape}.")
        self._true_pos += int(np.sum(pred & label))
        self._pred_pos += int(np.sum(pred))
        self._label_pos += int(np.sum(label))

    def _ratio(self, what, numerator, denominator):
        if denominator == 0:
            logger.warning(f"{self}: {what} is undefined (nothing to divide by in this pass); "
                           "using 0.0.")
            return 0.0
        return numerator / denominator

    def _after_inference(self):
        return {
            self.prefix + "_precision": self._ratio("precision", self._true_pos, self._pred_pos),
            self.prefix + "_recall": self._ratio("recall", self._true_pos, self._label_pos),
        }

    def __str__(self):
        return f"BinaryClassificationStats({self.pred_tensor_name!r}, {self.label_tensor_name!r})"
